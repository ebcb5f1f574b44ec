import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { GatewayError } from "../../src/client/Errors.ts"
import type { VideoTaskRequest } from "../../src/client/Tasks.ts"
import { api } from "./api.ts"
import { eventually } from "./eventually.ts"
import type { TestGateway } from "./gateway.ts"

/** A valid video task request (the sandbox's famS 480p), with `over`'s fields in place of the defaults. */
export const videoRequest = (over: Partial<VideoTaskRequest> = {}): VideoTaskRequest => ({
  model: "provy-famS-2.0-480p",
  operation: "generation",
  input: { prompt: "a red fox running through snow" },
  output: { duration: 4 },
  ...over
})

/**
 * Polls a task through the typed client until `done` holds; returns every
 * state seen, the last one satisfying `done`. Its loose types are for the
 * files not yet moved to `api(gw, account).waitTask` (`./api.ts`), which new
 * tests use instead.
 */
export const pollTask = async (
  gw: TestGateway,
  key: string,
  id: string,
  done: (task: any) => boolean = (t) => t.status === "succeeded" || t.status === "failed",
  { intervalMs = 100, deadlineMs = 90_000, kind = "video" as "video" | "image" } = {}
): Promise<Array<any>> => {
  const seen: Array<any> = []
  // A read that is not a 200 ends the wait at once.
  let failure: Error | undefined
  await eventually(
    async () => {
      const task = await api(gw, { resource: key }).getTask(kind, id).catch((error: unknown) => {
        if (!(error instanceof GatewayError)) throw error
        failure = new Error(`GET task: ${error.status} ${error.code}: ${error.message}`)
        return undefined
      })
      if (task === undefined) return true
      seen.push(task)
      return done(task)
    },
    `task ${id} reaches the awaited state`,
    { deadlineMs, intervalMs }
  ).catch(() => {
    throw new Error(`task ${id} never reached the awaited state; last: ${JSON.stringify(seen.at(-1))}`)
  })
  if (failure !== undefined) throw failure
  return seen
}

/** Runs SQL against the gateway's own database. */
export const query = <A extends object>(
  gw: TestGateway,
  f: (sql: SqlClient.SqlClient) => Effect.Effect<ReadonlyArray<A>, unknown>
) => gw.runtime.runPromise(Effect.flatMap(SqlClient.SqlClient, f)) as Promise<ReadonlyArray<A>>

export const ledgerOf = (gw: TestGateway, taskId: string) =>
  query<{ kind: string; wallet_micros: number; subscription_micros: number }>(
    gw,
    (sql) =>
      sql`SELECT kind, wallet_micros, subscription_micros FROM ledger WHERE task_id = ${taskId} ORDER BY created_at, CASE kind WHEN 'charge' THEN 0 ELSE 1 END`
  )

export const eventsOf = (gw: TestGateway, taskId: string) =>
  query<{ id: string; type: string; status: string; payload: any }>(
    gw,
    (sql) => sql`SELECT id, type, status, payload FROM webhook_events WHERE task_id = ${taskId}`
  )
