import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createAccount } from "../support/adminApi.ts"
import { checkBooks } from "../support/books.ts"
import { unthrottled } from "../support/config.ts"
import { backend } from "../support/database.ts"
import { startGateway, type TestGateway } from "../support/gateway.ts"
import type { Rows } from "../support/installation.ts"
import { taskApi } from "../support/taskApi.ts"
import { eventsOf, query, videoRequest } from "../support/tasks.ts"

/**
 * Deadlines enforced by the engine (ROLE=all, the default limits): a 60 s
 * sandbox task with `Cancel-After: 10s` ends by the contract's bound, 15 s
 * after its creation, with `task_deadline_exceeded` and its refund; a task
 * still queued at its deadline is never claimed; a deadline lives in the
 * database, so a restarted service still enforces it.
 */

const GRANTED = { wallet: 100, subscription: 0 }

let gw: TestGateway
beforeAll(async () => {
  gw = await startGateway({ CONFIG_DIR: unthrottled(), ROLE: "all" })
})
afterAll(() => gw?.close())

const rowsOf = (target: TestGateway): Rows => (text, params) =>
  target.runtime.runPromise(
    Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe(text, (params ?? []) as Array<any>))
  ) as Promise<Array<any>>

const slow = { provider_options: { sandbox: { delay_ms: 60_000 } } }

describe(`deadlines (${backend})`, () => {
  it(
    "a 60 s sandbox task with Cancel-After: 10s ends within 15 s of its creation, refunded, its event recorded",
    async () => {
      const acct = await createAccount(gw, { name: "d1", wallet_credits: GRANTED.wallet })
      const sentAt = Date.now()
      const caller = taskApi(gw, acct)
      const created = await caller.createVideoWith(videoRequest(slow), { cancelAfter: "10s" })
      expect(created.status).toBe(202)
      const seen = await caller.waitTask("video", created.task.id, undefined, { deadlineMs: 90_000, intervalMs: 200 })
      const endedAfterMs = Date.now() - sentAt
      const task = seen.at(-1)!
      expect(seen.some((t) => t.status === "in_progress")).toBe(true)
      expect(task).toMatchObject({ status: "failed", error: { code: "task_deadline_exceeded", retryable: true } })
      // The contract's bound, on the task's own clock (whole seconds).
      expect((task.completed_at ?? Infinity) - task.created_at).toBeLessThanOrEqual(15)
      console.log(`deadline (${backend}): Cancel-After 10s ended after ${endedAfterMs} ms as the caller saw it`)
      expect((await eventsOf(gw, created.task.id)).map((e) => e.type)).toEqual(["video.task.failed"])
      await checkBooks(rowsOf(gw), acct.id, GRANTED, new Map([[created.task.id, "failed" as const]]))
    },
    60_000
  )

  it(
    "a deadline lives in the database: a task queued under an API-only process, its deadline passed while no engine ran, is ended by the next engine without ever being claimed",
    async () => {
      const api = await startGateway({ CONFIG_DIR: unthrottled() })
      let engine: TestGateway | undefined
      try {
        const acct = await createAccount(api, { name: "d2", wallet_credits: GRANTED.wallet })
        const reply = await taskApi(api, acct).createVideoWith(videoRequest(), { cancelAfter: "10m" })
        expect(reply.status).toBe(202)
        const created = reply.task
        // As if ten minutes had passed with no engine running: the deadline is behind it.
        await query(api, (sql) => sql`UPDATE tasks SET cancel_at = 1 WHERE id = ${created.id}`)
        await api.stop()
        engine = await startGateway({ CONFIG_DIR: unthrottled(), ROLE: "all" }, undefined, {}, backend, api)
        const seen = await taskApi(engine, acct).waitTask("video", created.id, undefined, {
          deadlineMs: 90_000,
          intervalMs: 200
        })
        const task = seen.at(-1)!
        expect(task).toMatchObject({ status: "failed", error: { code: "task_deadline_exceeded", retryable: true } })
        expect(task.started_at).toBeNull()
        const [row] = await query<{ attempt: number }>(
          engine,
          (sql) => sql`SELECT attempt FROM tasks WHERE id = ${created.id}`
        )
        expect(row!.attempt).toBe(0)
        await checkBooks(rowsOf(engine), acct.id, GRANTED, new Map([[created.id, "failed" as const]]))
      } finally {
        await (engine ?? api).close()
      }
    },
    60_000
  )
})
