import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createAccount, operator } from "../support/adminApi.ts"
import { api } from "../support/api.ts"
import type { KeyPair } from "../support/api.ts"
import { checkBooks } from "../support/books.ts"
import { unthrottled } from "../support/config.ts"
import { backend } from "../support/database.ts"
import { eventually } from "../support/eventually.ts"
import { startGateway, type TestGateway } from "../support/gateway.ts"
import { raw } from "../support/http.ts"
import type { Rows } from "../support/installation.ts"
import { type Receiver, startReceiver } from "../support/receiver.ts"
import { refused, taskApi } from "../support/taskApi.ts"
import { eventsOf, ledgerOf, videoRequest } from "../support/tasks.ts"

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

const create = (acct: KeyPair) => api(gw, acct).createVideoReply(videoRequest())

const cancel = (target: TestGateway, key: string, id: string, kind: "video" | "image" = "video") =>
  taskApi(target, { resource: key }).cancel(kind, id)

describe(`cancel (${backend})`, () => {
  it("a queued task ends at once: failed task_cancelled, refunded in full, its event recorded, books balanced", async () => {
    const acct = await createAccount(gw, { name: "c1", wallet_credits: GRANTED.wallet })
    const created = await create(acct)
    expect(created.status).toBe(202)
    // A 200: the typed client decodes the contract's answer or fails.
    const reply = await cancel(gw, acct.resource.key, created.task.id)
    expect(reply).toMatchObject({
      id: created.task.id,
      object: "video.task",
      status: "failed",
      error: { code: "task_cancelled", retryable: false }
    })
    expect(reply.completed_at).not.toBeNull()
    // The answer is the task object exactly as the query endpoint returns it.
    const read = await api(gw, acct).getVideo(created.task.id)
    expect(read).toEqual(reply)
    const ledger = await ledgerOf(gw, created.task.id)
    expect(ledger.map((l) => l.kind)).toEqual(["charge", "refund"])
    expect(Number(ledger[0]!.wallet_micros) + Number(ledger[1]!.wallet_micros)).toBe(0)
    const events = await eventsOf(gw, created.task.id)
    expect(events.map((e) => e.type)).toEqual(["video.task.failed"])
    expect(events[0]!.payload.data.object).toEqual(reply)
    await checkBooks(rowsOf(gw), acct.id, GRANTED, new Map([[created.task.id, "failed" as const]]))
  })

  it("cancelling a cancelled task answers it again (200), with no second refund or event", async () => {
    const acct = await createAccount(gw, { name: "c2", wallet_credits: GRANTED.wallet })
    const created = (await create(acct)).task
    const first = await cancel(gw, acct.resource.key, created.id)
    // A 200 again (the typed client decodes the contract's answer or fails).
    const again = await cancel(gw, acct.resource.key, created.id)
    expect(again).toEqual(first)
    expect((await ledgerOf(gw, created.id)).map((l) => l.kind)).toEqual(["charge", "refund"])
    expect(await eventsOf(gw, created.id)).toHaveLength(1)
  })

  it("an image task is cancelled on its own route; the video route does not find it", async () => {
    const acct = await createAccount(gw, { name: "c3", wallet_credits: GRANTED.wallet })
    const created = await api(gw, acct).createImageReply({
      model: "provx-image-1",
      operation: "generation",
      input: { prompt: "a lighthouse at dusk" }
    })
    expect(created.status).toBe(202)
    await refused(cancel(gw, acct.resource.key, created.task.id, "video"), 404, "task_not_found")
    const reply = await cancel(gw, acct.resource.key, created.task.id, "image")
    expect(reply).toMatchObject({ object: "image.task", status: "failed", error: { code: "task_cancelled" } })
    expect((await eventsOf(gw, created.task.id)).map((e) => e.type)).toEqual(["image.task.failed"])
  })

  it("unknown and another account's tasks: 404 task_not_found; a model key: 403; no key: 401", async () => {
    const owner = await createAccount(gw, { name: "c4", wallet_credits: GRANTED.wallet })
    const other = await createAccount(gw, { name: "c5", wallet_credits: GRANTED.wallet })
    const created = (await create(owner)).task
    await refused(cancel(gw, owner.resource.key, "task_doesnotexist0000000000"), 404, "task_not_found")
    await refused(cancel(gw, other.resource.key, created.id), 404, "task_not_found")
    await refused(cancel(gw, owner.model.key, created.id), 403, "permission_denied")
    // No key at all: outside the typed client, which always sends one.
    const anonymous = await raw(gw, "POST", `/v1/video/tasks/${created.id}/cancel`, {})
    expect(anonymous.status).toBe(401)
    // None of them touched it.
    const read = await api(gw, owner).getVideo(created.id)
    expect(read.status).toBe("queued")
    expect(await ledgerOf(gw, created.id)).toHaveLength(1)
  })

  it("a task that ended otherwise: 409 task_not_cancellable (conflict_error) naming why, nothing changed", async () => {
    const acct = await createAccount(gw, { name: "c6", wallet_credits: GRANTED.wallet })
    const done = (await create(acct)).task
    const failed = (await create(acct)).task
    await rowsOf(gw)(
      `UPDATE tasks SET status = 'succeeded', run_state = 'done', progress = 100, completed_at = created_at WHERE id = $1`,
      [done.id]
    )
    await rowsOf(gw)(
      `UPDATE tasks SET status = 'failed', run_state = 'done', completed_at = created_at,
        error = '{"code":"video_task_failed","message":"x","retryable":true}'::jsonb WHERE id = $1`,
      [failed.id]
    )
    const refusedDone = await refused(
      cancel(gw, acct.resource.key, done.id),
      409,
      "task_not_cancellable",
      "conflict_error"
    )
    expect(refusedDone.message).toMatch(/already succeeded/)
    const refusedFailed = await refused(
      cancel(gw, acct.resource.key, failed.id),
      409,
      "task_not_cancellable",
      "conflict_error"
    )
    expect(refusedFailed.message).toMatch(/already failed/)
    expect(await eventsOf(gw, done.id)).toHaveLength(0)
    expect((await ledgerOf(gw, failed.id)).map((l) => l.kind)).toEqual(["charge"])
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
    // A 200: the typed admin client decodes the contract's answer or fails.
    await operator(engine).setWebhook(acct.id, { url: hook.url })
    const caller = taskApi(engine, acct)
    const slow = { provider_options: { sandbox: { delay_ms: 60_000 } } }
    const post = async (over: Parameters<typeof videoRequest>[0]) => (await caller.createVideo(videoRequest(over))).id
    // The sandbox channel runs two at once: the third waits in the queue.
    const running = [await post(slow), await post(slow)]
    for (const id of running) await caller.waitTask("video", id, (t) => t.status === "in_progress")
    const queued = await post(slow)
    const asQueued = await caller.getVideo(queued)
    expect(asQueued.status).toBe("queued")

    const ids = [queued, ...running]
    for (const id of ids) {
      // A 200: the typed client decodes the contract's answer or fails.
      const reply = await cancel(engine, acct.resource.key, id)
      expect(reply.error?.code, id).toBe("task_cancelled")
    }
    const receipts = await hook.waitFor(3)
    expect(new Set(receipts.map((r) => (r.json as any).data.object.id))).toEqual(new Set(ids))
    for (const receipt of receipts) {
      expect((receipt.json as any).type).toBe("video.task.failed")
      expect((receipt.json as any).data.object.error.code).toBe("task_cancelled")
    }
    // The worker's slots are free again: a new task runs (its run was interrupted, not left to the 60 s render).
    const next = await post({ provider_options: { sandbox: { delay_ms: 10 } } })
    await caller.waitTask("video", next, (t) => t.status === "succeeded")
    await eventually(async () => (await hook.waitFor(4)).length >= 4 || undefined, "the next task's event")
    await checkBooks(
      rowsOf(engine),
      acct.id,
      GRANTED,
      new Map([...ids.map((id) => [id, "failed" as const] as const), [next, "succeeded" as const]])
    )
  })
})
