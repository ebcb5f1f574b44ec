import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { checkBooks } from "../support/books.ts"
import { unthrottled } from "../support/config.ts"
import { backend } from "../support/database.ts"
import { eventually } from "../support/eventually.ts"
import { startGateway, type TestGateway } from "../support/gateway.ts"
import { admin, call, createAccount, expectError } from "../support/http.ts"
import type { Rows } from "../support/installation.ts"
import { type Receiver, startReceiver } from "../support/receiver.ts"
import { eventsOf, ledgerOf, pollTask, videoRequest } from "../support/tasks.ts"

/**
 * Cancelling tasks over HTTP (the API alone, so a task stays where it was
 * put): who may, what each state answers, the refund and the event.
 */

let gw: TestGateway
beforeAll(async () => {
  gw = await startGateway({ CONFIG_DIR: unthrottled() })
})
afterAll(() => gw?.close())

const GRANTED = { wallet: 100, subscription: 0 }

const rowsOf = (target: TestGateway): Rows => (text, params) =>
  target.runtime.runPromise(
    Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe(text, (params ?? []) as Array<any>))
  ) as Promise<Array<any>>

const create = (key: string, over: Record<string, unknown> = {}, headers: Record<string, string> = {}) =>
  call(gw, "POST", "/v1/video/tasks", { key, json: videoRequest(over), headers })

const cancel = (target: TestGateway, key: string, id: string, kind = "video") =>
  call(target, "POST", `/v1/${kind}/tasks/${id}/cancel`, { key })

describe(`cancel (${backend})`, () => {
  it("a queued task ends at once: failed task_cancelled, refunded in full, its event recorded, books balanced", async () => {
    const acct = await createAccount(gw, { name: "c1", wallet_credits: GRANTED.wallet })
    const created = await create(acct.model.key)
    expect(created.status).toBe(202)
    const reply = await cancel(gw, acct.resource.key, created.body.id)
    expect(reply.status).toBe(200)
    expect(reply.body).toMatchObject({
      id: created.body.id,
      object: "video.task",
      status: "failed",
      error: { code: "task_cancelled", retryable: false }
    })
    expect(reply.body.completed_at).not.toBeNull()
    // The answer is the task object exactly as the query endpoint returns it.
    const read = await call(gw, "GET", `/v1/video/tasks/${created.body.id}`, { key: acct.resource.key })
    expect(read.body).toEqual(reply.body)
    const ledger = await ledgerOf(gw, created.body.id)
    expect(ledger.map((l) => l.kind)).toEqual(["charge", "refund"])
    expect(Number(ledger[0]!.wallet_micros) + Number(ledger[1]!.wallet_micros)).toBe(0)
    const events = await eventsOf(gw, created.body.id)
    expect(events.map((e) => e.type)).toEqual(["video.task.failed"])
    expect(events[0]!.payload.data.object).toEqual(reply.body)
    await checkBooks(rowsOf(gw), acct.id, GRANTED, new Map([[created.body.id, "failed" as const]]))
  })

  it("cancelling a cancelled task answers it again (200), with no second refund or event", async () => {
    const acct = await createAccount(gw, { name: "c2", wallet_credits: GRANTED.wallet })
    const created = await create(acct.model.key)
    const first = await cancel(gw, acct.resource.key, created.body.id)
    const again = await cancel(gw, acct.resource.key, created.body.id)
    expect(again.status).toBe(200)
    expect(again.body).toEqual(first.body)
    expect((await ledgerOf(gw, created.body.id)).map((l) => l.kind)).toEqual(["charge", "refund"])
    expect(await eventsOf(gw, created.body.id)).toHaveLength(1)
  })

  it("an image task is cancelled on its own route; the video route does not find it", async () => {
    const acct = await createAccount(gw, { name: "c3", wallet_credits: GRANTED.wallet })
    const created = await call(gw, "POST", "/v1/image/tasks", {
      key: acct.model.key,
      json: { model: "provx-image-1", operation: "generation", input: { prompt: "a lighthouse at dusk" } }
    })
    expect(created.status).toBe(202)
    expectError(await cancel(gw, acct.resource.key, created.body.id, "video"), 404, "task_not_found")
    const reply = await cancel(gw, acct.resource.key, created.body.id, "image")
    expect(reply.status).toBe(200)
    expect(reply.body).toMatchObject({ object: "image.task", status: "failed", error: { code: "task_cancelled" } })
    expect((await eventsOf(gw, created.body.id)).map((e) => e.type)).toEqual(["image.task.failed"])
  })

  it("unknown and another account's tasks: 404 task_not_found; a model key: 403; no key: 401", async () => {
    const owner = await createAccount(gw, { name: "c4", wallet_credits: GRANTED.wallet })
    const other = await createAccount(gw, { name: "c5", wallet_credits: GRANTED.wallet })
    const created = await create(owner.model.key)
    expectError(await cancel(gw, owner.resource.key, "task_doesnotexist0000000000"), 404, "task_not_found")
    expectError(await cancel(gw, other.resource.key, created.body.id), 404, "task_not_found")
    expectError(await cancel(gw, owner.model.key, created.body.id), 403, "permission_denied")
    const anonymous = await call(gw, "POST", `/v1/video/tasks/${created.body.id}/cancel`, {})
    expect(anonymous.status).toBe(401)
    // None of them touched it.
    const read = await call(gw, "GET", `/v1/video/tasks/${created.body.id}`, { key: owner.resource.key })
    expect(read.body.status).toBe("queued")
    expect(await ledgerOf(gw, created.body.id)).toHaveLength(1)
  })

  it("a task that ended otherwise: 409 task_not_cancellable (conflict_error) naming why, nothing changed", async () => {
    const acct = await createAccount(gw, { name: "c6", wallet_credits: GRANTED.wallet })
    const done = await create(acct.model.key)
    const failed = await create(acct.model.key)
    await rowsOf(gw)(
      `UPDATE tasks SET status = 'succeeded', run_state = 'done', progress = 100, completed_at = created_at WHERE id = $1`,
      [done.body.id]
    )
    await rowsOf(gw)(
      `UPDATE tasks SET status = 'failed', run_state = 'done', completed_at = created_at,
        error = '{"code":"video_task_failed","message":"x","retryable":true}'::jsonb WHERE id = $1`,
      [failed.body.id]
    )
    const refused = await cancel(gw, acct.resource.key, done.body.id)
    expectError(refused, 409, "task_not_cancellable", "conflict_error")
    expect(refused.body.error.message).toMatch(/already succeeded/)
    const refusedFailed = await cancel(gw, acct.resource.key, failed.body.id)
    expectError(refusedFailed, 409, "task_not_cancellable", "conflict_error")
    expect(refusedFailed.body.error.message).toMatch(/already failed/)
    expect(await eventsOf(gw, done.body.id)).toHaveLength(0)
    expect((await ledgerOf(gw, failed.body.id)).map((l) => l.kind)).toEqual(["charge"])
  })
})

describe(`cancel with the engine running (${backend})`, () => {
  let engine: TestGateway
  let hook: Receiver
  beforeAll(async () => {
    engine = await startGateway({ CONFIG_DIR: unthrottled(), ROLE: "all" })
    hook = await startReceiver()
  })
  afterAll(async () => {
    await engine?.close()
    await hook?.close()
  })

  it("a running sandbox task is interrupted and refunded; a queued one behind it too; both events delivered", async () => {
    const acct = await createAccount(engine, { name: "e1", wallet_credits: GRANTED.wallet })
    expect((await admin(engine, "PUT", `/admin/v1/accounts/${acct.id}/webhook`, { url: hook.url })).status).toBe(200)
    const slow = { provider_options: { sandbox: { delay_ms: 60_000 } } }
    const post = (over: Record<string, unknown>) =>
      call(engine, "POST", "/v1/video/tasks", { key: acct.model.key, json: videoRequest(over) })
    // The sandbox channel runs two at once: the third waits in the queue.
    const running = [(await post(slow)).body.id, (await post(slow)).body.id]
    for (const id of running) await pollTask(engine, acct.resource.key, id, (t) => t.status === "in_progress")
    const queued = (await post(slow)).body.id
    const asQueued = await call(engine, "GET", `/v1/video/tasks/${queued}`, { key: acct.resource.key })
    expect(asQueued.body.status).toBe("queued")

    const ids = [queued, ...running]
    for (const id of ids) {
      const reply = await cancel(engine, acct.resource.key, id)
      expect(reply.status, id).toBe(200)
      expect(reply.body.error.code).toBe("task_cancelled")
    }
    const receipts = await hook.waitFor(3)
    expect(new Set(receipts.map((r) => (r.json as any).data.object.id))).toEqual(new Set(ids))
    for (const receipt of receipts) {
      expect((receipt.json as any).type).toBe("video.task.failed")
      expect((receipt.json as any).data.object.error.code).toBe("task_cancelled")
    }
    // The worker's slots are free again: a new task runs (its run was interrupted, not left to the 60 s render).
    const next = (await post({ provider_options: { sandbox: { delay_ms: 10 } } })).body.id
    await pollTask(engine, acct.resource.key, next, (t) => t.status === "succeeded")
    await eventually(async () => (await hook.waitFor(4)).length >= 4 || undefined, "the next task's event")
    await checkBooks(
      rowsOf(engine),
      acct.id,
      GRANTED,
      new Map([...ids.map((id) => [id, "failed" as const] as const), [next, "succeeded" as const]])
    )
  })
})
