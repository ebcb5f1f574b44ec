import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { GatewayError } from "../../src/client/Errors.ts"
import type { AnyTask, TaskOf, VideoTaskRequest } from "../../src/client/Tasks.ts"
import type { ImageTask, TaskKind, VideoTask } from "../../src/tasks/Task.ts"
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

interface PollOptions {
  readonly intervalMs?: number
  readonly deadlineMs?: number
}

const isDone = (task: AnyTask) => task.status === "succeeded" || task.status === "failed"

/**
 * Polls a task through the typed client until `done` holds (by default:
 * succeeded or failed); returns every state seen, the last one satisfying
 * `done` (`lastSeen`). A video task unless `kind` says otherwise, typed as
 * that kind's task.
 */
export function pollTask(
  gw: TestGateway,
  key: string,
  id: string,
  done?: (task: VideoTask) => boolean,
  options?: PollOptions & { readonly kind?: undefined }
): Promise<Array<VideoTask>>
export function pollTask<K extends TaskKind>(
  gw: TestGateway,
  key: string,
  id: string,
  done: ((task: TaskOf<K>) => boolean) | undefined,
  options: PollOptions & { readonly kind: K }
): Promise<Array<TaskOf<K>>>
export async function pollTask(
  gw: TestGateway,
  key: string,
  id: string,
  done: (task: never) => boolean = isDone,
  { deadlineMs = 90_000, intervalMs = 100, kind = "video" }: PollOptions & { readonly kind?: TaskKind | undefined } = {}
): Promise<Array<AnyTask>> {
  // The overloads pair `done` with the kind read; TypeScript cannot follow that pairing into this body.
  const holds = done as (task: AnyTask) => boolean
  const seen: Array<AnyTask> = []
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
      return holds(task)
    },
    `task ${id} reaches the awaited state`,
    { deadlineMs, intervalMs }
  ).catch(() => {
    throw new Error(`task ${id} never reached the awaited state; last: ${JSON.stringify(seen.at(-1))}`)
  })
  if (failure !== undefined) throw failure
  return seen
}

/** The last of the states `pollTask` saw (the one that satisfied its `done`). */
export const lastSeen = <T extends AnyTask>(seen: ReadonlyArray<T>): T => {
  const last = seen.at(-1)
  if (last === undefined) throw new Error("no state of the task was seen")
  return last
}

const outcome = (task: AnyTask) =>
  task.error === null ? task.status : `${task.status} (${task.error.code}: ${task.error.message})`

/** A task's result, which only a succeeded task has; throws, naming the task's state, when it has none. */
export function resultOf(task: VideoTask): NonNullable<VideoTask["result"]>
export function resultOf(task: ImageTask): NonNullable<ImageTask["result"]>
export function resultOf(task: AnyTask): NonNullable<AnyTask["result"]> {
  if (task.result === null) throw new Error(`task ${task.id} has no result: it is ${outcome(task)}`)
  return task.result
}

/** A task's error, which only a failed task has; throws, naming the task's state, when it has none. */
export const taskErrorOf = (task: AnyTask): NonNullable<AnyTask["error"]> => {
  if (task.error === null) throw new Error(`task ${task.id} has no error: it is ${outcome(task)}`)
  return task.error
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
