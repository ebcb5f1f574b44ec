// Runs on PostgreSQL only
import { Effect } from "effect"
import pg from "pg"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { Claim } from "../../src/tasks/engine/Claim.ts"
import { TaskOutcomes } from "../../src/tasks/engine/TaskOutcomes.ts"
import { TaskQueue } from "../../src/tasks/engine/TaskQueue.ts"
import { createAccount } from "../support/adminApi.ts"
import { checkBooks } from "../support/books.ts"
import { unthrottled } from "../support/config.ts"
import { startGateway, type TestGateway } from "../support/gateway.ts"
import { raw } from "../support/http.ts"
import { videoRequest } from "../support/tasks.ts"

/**
 * Creates of one account from several callers at once, while that account's
 * tasks finish, are refunded and stream their changes: the load under which
 * creates had deadlocked in the charge (PostgreSQL's `deadlock detected`)
 * and, once their retries were spent, answered 500. The test plays the
 * workers itself (this gateway runs ROLE=api) through TaskQueue and
 * TaskOutcomes, so every completion, failure and refund is the engine's own
 * transaction. PostgreSQL only: PGlite has one connection, so nothing runs
 * at the same time there.
 *
 * Deadlocks are read from PostgreSQL's own count for the test's database
 * (`pg_stat_database.deadlocks`), after the gateway has closed its
 * connections (a backend reports its counts as it exits): a deadlock that a
 * retry hid from the caller still counts.
 */
const CALLERS = 8
const CREATES_PER_CALLER = 150
const FINISHERS = 4
const STREAMS = 20

let gw: TestGateway
beforeAll(async () => {
  gw = await startGateway({ CONFIG_DIR: unthrottled() })
})
afterAll(() => gw?.close())

const withDb = async <A>(f: (client: pg.Client) => Promise<A>) => {
  const client = new pg.Client({ connectionString: gw.databaseUrl })
  await client.connect()
  try {
    return await f(client)
  } finally {
    await client.end()
  }
}

const deadlocks = () =>
  withDb(async (c) =>
    Number(
      (await c.query(`SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()`)).rows[0].deadlocks
    )
  )

const run = <A, E>(effect: Effect.Effect<A, E, TaskQueue | TaskOutcomes>) =>
  gw.runtime.runPromise(effect as Effect.Effect<A, E, never>)

/** Opens a live status stream on a task and reads it until it ends; whether its last event was terminal. */
const stream = async (id: string, key: string) => {
  const res = await fetch(`${gw.url}/v1/video/tasks/${id}/events`, { headers: { authorization: `Bearer ${key}` } })
  const text = await res.text()
  const data = text.split("\n").filter((l) => l.startsWith("data: "))
  const last = data.length === 0 ? undefined : JSON.parse(data[data.length - 1]!.slice(6))
  return { status: res.status, ended: last?.status === "succeeded" || last?.status === "failed" }
}

describe("creates of one account under load (postgresql)", () => {
  it(
    "every create answers 202 while the account's tasks finish and refund; no deadlock; the books balance",
    async () => {
      const acct = await createAccount(gw, { name: "busy", wallet_credits: 1_000_000 })
      const before = await deadlocks()
      const statuses: Array<number> = []
      const outcomes = new Map<string, "succeeded" | "failed">()
      let creating = true

      const callers = Array.from({ length: CALLERS }, async () => {
        for (let i = 0; i < CREATES_PER_CALLER; i++) {
          const res = await raw(gw, "POST", "/v1/video/tasks", { key: acct.model.key, json: videoRequest() })
          statuses.push(res.status)
        }
      })
      // Workers: claim what is queued and end it, every other task failed (refunded).
      let n = 0
      const finishers = Array.from({ length: FINISHERS }, async (_, worker) => {
        for (;;) {
          const claims: ReadonlyArray<Claim> = await run(
            Effect.flatMap(TaskQueue, (q) => q.claim("sandbox", `load-${worker}`, 5, { concurrency: 100_000 }))
          )
          if (claims.length === 0) {
            if (!creating) return
            await new Promise((ok) => setTimeout(ok, 5))
            continue
          }
          await run(Effect.forEach(claims, (claim) =>
            Effect.flatMap(TaskOutcomes, (o) => {
              const fail = n++ % 2 === 1
              outcomes.set(claim.id, fail ? "failed" : "succeeded")
              return fail
                ? o.fail(claim, { code: "video_task_failed", message: "failed on purpose", retryable: true })
                : o.succeed(claim, [], { videos: [] })
            }), { concurrency: 5 }))
        }
      })
      // Streams follow some of the tasks as they are created and finish.
      const streams: Array<Promise<{ status: number; ended: boolean }>> = []
      const watcher = (async () => {
        while (creating && streams.length < STREAMS) {
          const list = await withDb((c) =>
            c.query(`SELECT id FROM tasks WHERE account_id = $1 AND status = 'queued' LIMIT 1`, [acct.id])
          )
          if (list.rows[0]) streams.push(stream(list.rows[0].id, acct.resource.key))
          await new Promise((ok) => setTimeout(ok, 50))
        }
      })()

      await Promise.all(callers)
      creating = false
      await Promise.all([...finishers, watcher])
      const streamed = await Promise.all(streams)

      expect(statuses.filter((s) => s !== 202)).toEqual([])
      expect(statuses).toHaveLength(CALLERS * CREATES_PER_CALLER)
      // Each stream ended on its task's terminal state.
      expect(streamed.filter((s) => s.status !== 200 || !s.ended)).toEqual([])
      await checkBooks(
        (text, params) => withDb(async (c) => (await c.query(text, params as Array<unknown>)).rows),
        acct.id,
        { wallet: 1_000_000, subscription: 0 },
        outcomes,
        0
      )

      // PostgreSQL's count is complete once the gateway's connections have ended.
      await gw.stop()
      const ended = async () =>
        withDb(async (c) =>
          Number(
            (await c.query(
              `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`
            )).rows[0].count
          )
        )
      for (let i = 0; i < 100 && (await ended()) > 0; i++) await new Promise((ok) => setTimeout(ok, 100))
      expect(await deadlocks()).toBe(before)
    },
    180_000
  )
})
