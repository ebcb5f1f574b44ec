import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { VideoTaskRequest } from "../../src/client/Tasks.ts"
import type { VideoTask } from "../../src/tasks/Task.ts"
import { createAccount, operator, type TestAccount } from "../support/adminApi.ts"
import { api } from "../support/api.ts"
import { unthrottled } from "../support/config.ts"
import { backend } from "../support/database.ts"
import { startGateway, type TestGateway } from "../support/gateway.ts"
import { expectError, raw } from "../support/http.ts"

let gw: TestGateway
beforeAll(async () => {
  gw = await startGateway({ CONFIG_DIR: unthrottled() })
})
afterAll(() => gw?.close())

const body = (over: Partial<VideoTaskRequest> = {}): VideoTaskRequest => ({
  model: "provy-famS-2.0-720p",
  operation: "generation",
  input: { prompt: "a red fox running through snow" },
  output: { duration: 5 },
  ...over
})

/** A valid create through the typed client: the task, the answer's status and headers. */
const create = (acct: TestAccount, request: VideoTaskRequest, idempotencyKey?: string) =>
  api(gw, acct).createVideoReply(request, { idempotencyKey })

/** A create sent as it is, for what the gateway must refuse (its error body on the wire is the point). */
const refused = (key: string, json: unknown, idempotencyKey?: string) =>
  raw(gw, "POST", "/v1/video/tasks", {
    key,
    json,
    ...(idempotencyKey === undefined ? {} : { headers: { "idempotency-key": idempotencyKey } })
  })

const ledger = (accountId: string) =>
  gw.runtime.runPromise(
    Effect.flatMap(SqlClient.SqlClient, (sql) =>
      sql<{ kind: string; task_id: string | null; wallet_micros: number; subscription_micros: number }>`
      SELECT kind, task_id, wallet_micros, subscription_micros FROM ledger WHERE account_id = ${accountId}
      ORDER BY created_at, id`)
  )

describe(`video tasks (${backend})`, () => {
  it("creates a queued task: 202, Location, Retry-After, every field of the video task object", async () => {
    const acct = await createAccount(gw, { name: "a", wallet_credits: 100 })
    // Sent raw: every field of the answer on the wire, not only those the client decodes, is the point.
    const reply = await raw(gw, "POST", "/v1/video/tasks", {
      key: acct.model.key,
      json: body({ client_reference_id: "order-1", metadata: { a: [1, { b: 2 }] } })
    })
    expect(reply.status).toBe(202)
    const task = reply.body as VideoTask
    expect(reply.headers.get("location")).toBe(`/v1/video/tasks/${task.id}`)
    expect(Number(reply.headers.get("retry-after"))).toBeGreaterThan(0)
    expect(reply.headers.get("idempotent-replayed")).toBeNull()
    expect(Object.keys(task).sort()).toEqual([
      "client_reference_id",
      "completed_at",
      "created_at",
      "error",
      "id",
      "metadata",
      "model",
      "object",
      "operation",
      "progress",
      "result",
      "started_at",
      "status",
      "updated_at"
    ])
    expect(task).toMatchObject({
      object: "video.task",
      model: "provy-famS-2.0-720p",
      operation: "generation",
      status: "queued",
      progress: 0,
      result: null,
      error: null,
      client_reference_id: "order-1",
      metadata: { a: [1, { b: 2 }] },
      started_at: null,
      completed_at: null
    })
    expect(task.id).toMatch(/^task_[0-9A-Za-z]{22}$/)
    expect(Math.abs(task.created_at - Date.now() / 1000)).toBeLessThan(60)
    expect(task.updated_at).toBe(task.created_at)

    expect(await api(gw, acct).getVideo(task.id)).toEqual(task)
  })

  it("pre-charges price × duration × group multiplier, in the ledger with the task id", async () => {
    // provy-famS-2.0-720p: 0.06 credits/s; vip multiplier 0.8; 5 s → 0.24 credits.
    const acct = await createAccount(gw, { name: "vip", group: "vip", wallet_credits: 1 })
    const reply = await create(acct, body())
    expect(reply.status).toBe(202)
    const entries = await ledger(acct.id)
    expect(entries.filter((e) => e.kind === "charge")).toEqual([{
      kind: "charge",
      task_id: reply.task.id,
      wallet_micros: -240_000,
      subscription_micros: 0
    }])
    const detail = await operator(gw).account(acct.id)
    expect(detail.wallet_credits).toBeCloseTo(0.76, 6)
    expect(detail.ledger).toMatchObject({ credited: 1, charged: 0.24, refunded: 0 })
  })

  it("uses the subscription balance only where the model's pricing policy allows it", async () => {
    const acct = await createAccount(gw, { name: "sub", wallet_credits: 10, subscription_credits: 0.1 })
    // famS allows subscription: 0.1 from the subscription, the rest (0.2) from the wallet.
    const s = await create(acct, body())
    expect(s.status).toBe(202)
    // famV standard does not: all of 8 s × 0.2 = 1.6 from the wallet.
    const v = await create(acct, body({ model: "provx-famV-3.1-standard-720p", output: { duration: 8 } }))
    expect(v.status).toBe(202)
    const charges = (await ledger(acct.id)).filter((e) => e.kind === "charge")
    expect(charges).toHaveLength(2)
    // Both rows share a second; their order is not the point.
    expect(charges).toEqual(expect.arrayContaining([
      { kind: "charge", task_id: s.task.id, wallet_micros: -200_000, subscription_micros: -100_000 },
      { kind: "charge", task_id: v.task.id, wallet_micros: -1_600_000, subscription_micros: 0 }
    ]))
    const detail = await operator(gw).account(acct.id)
    expect(detail.wallet_credits).toBeCloseTo(8.2, 6)
    expect(detail.subscription_credits).toBe(0)
  })

  it("402 insufficient_balance creates nothing; a 400 never charges", async () => {
    const acct = await createAccount(gw, { name: "poor", wallet_credits: 0.2, subscription_credits: 5 })
    // famV standard may not use the subscription; 0.2 < 0.8.
    const poor = await refused(acct.model.key, body({ model: "provx-famV-3.1-standard-720p", output: { duration: 4 } }))
    expectError(poor, 402, "insufficient_balance", "billing_error")
    expectError(await refused(acct.model.key, body({ output: { duration: 99 } })), 400, "invalid_video_duration")
    expect((await api(gw, acct).listVideos()).data).toEqual([])
    expect((await ledger(acct.id)).filter((e) => e.kind !== "credit")).toEqual([])
  })

  it("idempotency: same key + same content replays (also key order), different content is 409", async () => {
    const acct = await createAccount(gw, { name: "idem", wallet_credits: 100 })
    const first = await create(acct, body(), "key-1")
    expect(first.status).toBe(202)
    // The same content with its keys in another order, as the wire carries it.
    const reordered = {
      output: { duration: 5 },
      input: { prompt: "a red fox running through snow" },
      operation: "generation",
      model: "provy-famS-2.0-720p"
    } as const
    const again = await create(acct, reordered, "key-1")
    expect(again.status).toBe(202)
    expect(again.headers["idempotent-replayed"]).toBe("true")
    expect(again.task).toEqual(first.task)
    expectError(
      await refused(acct.model.key, body({ output: { duration: 6 } }), "key-1"),
      409,
      "idempotency_key_conflict",
      "conflict_error"
    )
    // Validation runs before the replay: an invalid body is a 400 even with a used key.
    expectError(
      await refused(acct.model.key, body({ provider_options: { famS: { generate_audio: false } } }), "key-1"),
      400,
      "invalid_provider_options"
    )
    // Keys are per account.
    const other = await createAccount(gw, { name: "other", wallet_credits: 100 })
    const theirs = await create(other, body(), "key-1")
    expect(theirs.task.id).not.toBe(first.task.id)
    expect((await ledger(acct.id)).filter((e) => e.kind === "charge")).toHaveLength(1)
    expectError(await refused(acct.model.key, body(), "k".repeat(129)), 400, "invalid_request")
    expect((await create(acct, body(), "k".repeat(128))).status).toBe(202)
  })

  it("50 concurrent creates with one key make one task and one charge", async () => {
    const acct = await createAccount(gw, { name: "race", wallet_credits: 100 })
    const replies = await Promise.all(Array.from({ length: 50 }, () => create(acct, body(), "race-key")))
    expect(replies.map((r) => r.status)).toEqual(Array(50).fill(202))
    expect(new Set(replies.map((r) => r.task.id)).size).toBe(1)
    expect(replies.filter((r) => r.headers["idempotent-replayed"] === "true")).toHaveLength(49)
    expect((await ledger(acct.id)).filter((e) => e.kind === "charge")).toHaveLength(1)
    expect((await api(gw, acct).listVideos()).data).toHaveLength(1)
  })

  it("a used key is replayed even when the balance can no longer pay: the original, not a 402", async () => {
    const acct = await createAccount(gw, { name: "spent", wallet_credits: 100 })
    const first = await create(acct, body(), "spent-key")
    expect(first.status).toBe(202)
    await gw.runtime.runPromise(
      Effect.flatMap(SqlClient.SqlClient, (sql) => sql`UPDATE accounts SET wallet_micros = 0 WHERE id = ${acct.id}`)
    )
    const again = await create(acct, body(), "spent-key")
    expect(again.status).toBe(202)
    expect(again.headers["idempotent-replayed"]).toBe("true")
    expect(again.task.id).toBe(first.task.id)
    expectError(await refused(acct.model.key, body(), "fresh-key"), 402, "insufficient_balance", "billing_error")
    expectError(
      await refused(acct.model.key, body({ output: { duration: 6 } }), "spent-key"),
      409,
      "idempotency_key_conflict"
    )
    expect((await ledger(acct.id)).filter((e) => e.kind === "charge")).toHaveLength(1)
  })

  it("a failed task is replayed as it is, not re-created", async () => {
    const acct = await createAccount(gw, { name: "failed", wallet_credits: 100 })
    const first = await create(acct, body(), "fail-key")
    await gw.runtime.runPromise(
      Effect.flatMap(SqlClient.SqlClient, (sql) =>
        sql`UPDATE tasks SET status = 'failed', progress = 100,
        error = '{"code":"video_task_failed","message":"upstream failed","retryable":true}'::jsonb
        WHERE id = ${first.task.id}`)
    )
    const again = await create(acct, body(), "fail-key")
    expect(again.headers["idempotent-replayed"]).toBe("true")
    expect(again.task).toMatchObject({ id: first.task.id, status: "failed", error: { code: "video_task_failed" } })
  })

  it("batch query keeps request order and names the missing ids (other accounts' included)", async () => {
    const acct = await createAccount(gw, { name: "batch", wallet_credits: 100 })
    const other = await createAccount(gw, { name: "batch-other", wallet_credits: 100 })
    const ids: Array<string> = []
    for (let i = 0; i < 3; i++) ids.push((await create(acct, body())).task.id)
    const foreign = (await create(other, body())).task.id
    const found = await api(gw, acct).client((c) =>
      c.resource.taskRead.queryVideoTasks({ payload: { task_ids: [ids[2]!, "task_nope", ids[0]!, foreign, ids[1]!] } })
    )
    expect(found.object).toBe("list")
    expect(found.data.map((t) => t.id)).toEqual([ids[2], ids[0], ids[1]])
    expect(found.missing).toEqual(["task_nope", foreign])
    for (const task_ids of [[], Array.from({ length: 101 }, (_, i) => `t${i}`), "x", [1]]) {
      expectError(
        await raw(gw, "POST", "/v1/video/tasks/query", { key: acct.resource.key, json: { task_ids } }),
        400,
        "invalid_request"
      )
    }
    const hundred = Array.from({ length: 100 }, (_, i) => `t${i}`)
    expect((await api(gw, acct).queryTasks("video", hundred)).missing).toHaveLength(100)
    expectError(
      await raw(gw, "POST", "/v1/video/tasks/query", { key: acct.model.key, json: { task_ids: ids } }),
      403,
      "permission_denied"
    )
  })

  it("accepts the sandbox switch on sandbox-routed models and checks its fields", async () => {
    const acct = await createAccount(gw, { name: "sandbox", wallet_credits: 100 })
    const ok = await create(acct, body({ provider_options: { sandbox: { outcome: "fail", delay_ms: 50 } } }))
    expect(ok.status).toBe(202)
    for (const sandbox of [{ outcome: "explode" }, { delay_ms: -1 }, { delay_ms: 1.5 }, { speed: 2 }]) {
      expectError(
        await refused(acct.model.key, body({ provider_options: { sandbox } })),
        400,
        "invalid_provider_options"
      )
    }
  })

  it("ledger rows add up to the balances", async () => {
    const acct = await createAccount(gw, { name: "sums", wallet_credits: 3, subscription_credits: 0.5 })
    await operator(gw).addCredits(acct.id, { wallet: 1.25 })
    for (const duration of [4, 5, 6, 7]) {
      expect((await create(acct, body({ output: { duration } }))).status).toBe(202)
    }
    expect(
      (await create(acct, body({ model: "provx-famV-3.1-standard-720p", output: { duration: 4 } }))).status
    ).toBe(202)
    const entries = await ledger(acct.id)
    const detail = await operator(gw).account(acct.id)
    const sum = (f: (e: (typeof entries)[number]) => number) => entries.reduce((n, e) => n + f(e), 0)
    expect(sum((e) => e.wallet_micros)).toBe(Math.round(detail.wallet_credits * 1e6))
    expect(sum((e) => e.subscription_micros)).toBe(Math.round(detail.subscription_credits * 1e6))
    // 22 s of famS at 0.06 + 4 s of famV at 0.2 = 1.32 + 0.8
    expect(detail.ledger.charged).toBeCloseTo(2.12, 6)
    expect(detail.wallet_credits + detail.subscription_credits).toBeCloseTo(4.75 - 2.12, 6)
  })

  it("the OpenAPI document describes the video endpoints, and /docs renders it", async () => {
    const doc = await raw(gw, "GET", "/openapi.json")
    expect(Object.keys((doc.body as { paths: object }).paths)).toEqual(expect.arrayContaining([
      "/v1/video/tasks",
      "/v1/video/tasks/{task_id}",
      "/v1/video/tasks/query",
      "/v1/models"
    ]))
    const page = await fetch(`${gw.url}/docs`)
    expect(page.status).toBe(200)
    expect(page.headers.get("content-type")).toContain("text/html")
  })
})
