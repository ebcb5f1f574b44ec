import { HttpClientRequest } from "@effect/platform"
import { Effect, Option } from "effect"
import type { LookupAddress } from "node:dns"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { guardedLookup, makeTargetHttpClient, PRIVATE_TARGET } from "../../src/runtime/node/TargetHttpClient.ts"
import type { VideoTask } from "../../src/tasks/Task.ts"
import { nextAttemptAt, retryPolicy } from "../../src/webhooks/DeliveryRules.ts"
import { WebhookEventRecord } from "../../src/webhooks/EventRecord.ts"
import { createAccount, operator } from "../support/adminApi.ts"
import { api } from "../support/api.ts"
import { configWith } from "../support/config.ts"
import { backend } from "../support/database.ts"
import { eventually, sleep } from "../support/eventually.ts"
import { startGateway, type TestGateway } from "../support/gateway.ts"
import { expectError, raw, rawAdmin } from "../support/http.ts"
import { type Receipt, type Receiver, startReceiver, verifyStandardWebhook } from "../support/receiver.ts"
import { query, videoRequest } from "../support/tasks.ts"

/**
 * Webhook delivery in-process (ROLE=all) to a real receiver on loopback:
 * the events' content and headers as a receiver checks them (bearer key and
 * a Standard Webhooks verifier from npm), the retry schedule, time-outs, key
 * rotation between attempts, the attempt history of the admin API and the
 * refusal of private targets. Crashes and replicas: webhooks-process.test.ts.
 */

const INTERVAL_S = 1
const MAX_ATTEMPTS = 3
const TIMEOUT_S = 1

let gw: TestGateway
const receivers: Array<Receiver> = []
beforeAll(async () => {
  const config = configWith("limits.json", (limits) => {
    limits.engine = { poll_interval_ms: 200, heartbeat_s: 1, lease_s: 10 }
  })
  gw = await startGateway({
    ROLE: "all",
    CONFIG_DIR: config,
    WEBHOOK_MAX_ATTEMPTS: String(MAX_ATTEMPTS),
    WEBHOOK_RETRY_INTERVAL_S: String(INTERVAL_S),
    WEBHOOK_TIMEOUT_S: String(TIMEOUT_S)
  })
})
afterAll(async () => {
  await Promise.all(receivers.map((r) => r.close()))
  await gw?.close()
})

const receiver = async (...args: Parameters<typeof startReceiver>) => {
  const r = await startReceiver(...args)
  receivers.push(r)
  return r
}

/** An account whose webhook points at `url`; its wk- key. */
const withWebhook = async (url: string, credits = 0) => {
  const acct = await createAccount(gw, { name: "hooks", wallet_credits: credits })
  const set = await operator(gw).setWebhook(acct.id, { url })
  return { ...acct, webhookKey: set.key }
}

const events = (accountId: string, params: { status?: string; limit?: number; after?: string } = {}) =>
  operator(gw).webhookEvents(accountId, params)

type EventRecord = (typeof WebhookEventRecord)["Type"]

/** Polls the admin API until the event satisfies `done`. */
const eventWhen = (accountId: string, eventId: string, done: (e: EventRecord) => boolean, deadlineMs = 30_000) =>
  eventually(
    async () => {
      const e = (await events(accountId)).data.find((x) => x.id === eventId)
      return e !== undefined && done(e) ? e : undefined
    },
    `event ${eventId} in the awaited state`,
    { deadlineMs }
  )

const sendTest = async (accountId: string) => (await operator(gw).testWebhook(accountId)).event_id

/** What a receiver checks on every call: method, JSON, the bearer key (whole value) and the signature. */
const expectAuthentic = (receipt: Receipt, key: string) => {
  expect(receipt.method).toBe("POST")
  expect(receipt.headers["content-type"]).toBe("application/json")
  expect(receipt.headers.authorization).toBe(`Bearer ${key}`)
  const verified = verifyStandardWebhook(receipt, key)
  expect(verified).toEqual(receipt.json)
  expect(receipt.headers["webhook-id"]).toBe(receipt.json.id)
  expect(Math.abs(Number(receipt.headers["webhook-timestamp"]) - Date.now() / 1000)).toBeLessThan(60)
  // Nothing internal travels with an event.
  expect(receipt.headers.traceparent).toBeUndefined()
  return verified
}

describe(`webhook delivery (${backend})`, { timeout: 60_000 }, () => {
  it("video.task.succeeded and video.task.failed: one signed call each, data.object equal to what GET returns", async () => {
    const hook = await receiver()
    const acct = await withWebhook(hook.url, 100)
    const created = await Promise.all(
      [{}, { outcome: "fail" }].map(async (sandbox) =>
        (await api(gw, acct).createVideo(videoRequest({ provider_options: { sandbox } }))).id
      )
    )
    const receipts = await hook.waitFor(2, 60_000)
    for (const receipt of receipts) {
      const payload = expectAuthentic(receipt, acct.webhookKey)
      // Read raw: the event's object must equal the task as the wire carries it.
      const reply = await raw(gw, "GET", `/v1/video/tasks/${payload.data.object.id}`, { key: acct.resource.key })
      expect(reply.status).toBe(200)
      const task = reply.body as VideoTask
      expect(payload).toEqual({
        id: expect.stringMatching(/^evt_/),
        object: "event",
        api_version: "2026-07-17",
        type: `video.task.${task.status}`,
        created_at: expect.any(Number),
        data: { object: task }
      })
      expect(Math.abs(payload.created_at - task.completed_at!)).toBeLessThanOrEqual(1)
      expect(Object.keys(payload)).toEqual(["id", "object", "api_version", "type", "created_at", "data"])
    }
    const byTask = new Map(receipts.map((r) => [r.json.data.object.id, r.json]))
    expect(byTask.get(created[0]!).type).toBe("video.task.succeeded")
    expect(byTask.get(created[0]!).data.object.result.videos).toHaveLength(1)
    expect(byTask.get(created[1]!).type).toBe("video.task.failed")
    expect(byTask.get(created[1]!).data.object.error.code).toBe("video_task_failed")

    // Delivered once each, and so recorded. The sleep is the scenario: a whole retry interval in which no second call may come.
    await sleep(INTERVAL_S * 1000 + 500)
    expect(hook.receipts).toHaveLength(2)
    for (const r of receipts) {
      const e = await eventWhen(acct.id, r.json.id, (x) => x.status === "delivered")
      expect(e).toMatchObject({
        object: "webhook.event",
        type: r.json.type,
        task_id: r.json.data.object.id,
        next_attempt_at: null
      })
      expect(e.attempts).toEqual([
        {
          attempt: 1,
          started_at: expect.any(Number),
          outcome: "delivered",
          status_code: 200,
          error: null,
          duration_ms: expect.any(Number),
          url: hook.url
        }
      ])
    }
  })

  it("webhook.test: 202, then its documented event, delivered like the others (also while the webhook is disabled)", async () => {
    const hook = await receiver()
    const acct = await withWebhook(hook.url)
    const eventId = await sendTest(acct.id)
    const [receipt] = await hook.waitFor(1)
    const payload = expectAuthentic(receipt!, acct.webhookKey)
    expect(payload).toEqual({
      id: eventId,
      object: "event",
      api_version: "2026-07-17",
      type: "webhook.test",
      created_at: expect.any(Number),
      data: { object: { object: "webhook.test", account_id: acct.id } }
    })

    // Disabled: a test still goes out (it checks the receiver before enabling); task events do not.
    await operator(gw).setWebhook(acct.id, { url: hook.url, enabled: false })
    const second = await sendTest(acct.id)
    expect((await hook.waitFor(2))[1]!.json.id).toBe(second)
    await eventWhen(acct.id, second, (e) => e.status === "delivered")
  })

  it("a receiver answering 500, 500, 200 gets exactly 3 calls, one event id, one body, at the configured interval", async () => {
    const hook = await receiver((_, i) => (i < 2 ? 500 : 200))
    const acct = await withWebhook(hook.url)
    const eventId = await sendTest(acct.id)
    const receipts = await hook.waitFor(3)
    for (const r of receipts) expectAuthentic(r, acct.webhookKey)
    expect(new Set(receipts.map((r) => r.headers["webhook-id"]))).toEqual(new Set([eventId]))
    expect(new Set(receipts.map((r) => r.body)).size).toBe(1)
    for (let i = 1; i < receipts.length; i++) {
      const gap = receipts[i]!.at - receipts[i - 1]!.at
      // The next attempt starts at least one interval after the previous one ended; generous above.
      expect(gap).toBeGreaterThanOrEqual(INTERVAL_S * 1000 - 20)
      expect(gap).toBeLessThan(INTERVAL_S * 1000 + 5_000)
    }
    const e = await eventWhen(acct.id, eventId, (x) => x.status === "delivered")
    expect(e.attempts.map((a: any) => [a.attempt, a.outcome, a.status_code, a.error])).toEqual([
      [1, "failed", 500, "HTTP 500"],
      [2, "failed", 500, "HTTP 500"],
      [3, "delivered", 200, null]
    ])
    // The sleep is the scenario: a whole retry interval after the delivery in which no fourth call may come.
    await sleep(INTERVAL_S * 1000 + 500)
    expect(hook.receipts).toHaveLength(3)
  })

  it("a receiver that never answers gets exactly WEBHOOK_MAX_ATTEMPTS calls; the event fails; the attempts are in the admin API", async () => {
    const hook = await receiver(() => "hang")
    const acct = await withWebhook(hook.url)
    const eventId = await sendTest(acct.id)
    const e = await eventWhen(acct.id, eventId, (x) => x.status === "failed")
    expect(hook.receipts).toHaveLength(MAX_ATTEMPTS)
    expect(new Set(hook.receipts.map((r) => r.headers["webhook-id"]))).toEqual(new Set([eventId]))
    expect(e.next_attempt_at).toBeNull()
    expect(e.completed_at).toEqual(expect.any(Number))
    expect(e.attempts).toHaveLength(MAX_ATTEMPTS)
    for (const [i, a] of e.attempts.entries()) {
      expect(a).toMatchObject({ attempt: i + 1, outcome: "failed", status_code: null, url: hook.url })
      expect(a.error).toMatch(/timed out/i)
      expect(a.duration_ms).toBeGreaterThanOrEqual(TIMEOUT_S * 1000 - 50)
    }
    // The sleep is the scenario: one more interval and time-out after the last attempt, in which no further call may come.
    await sleep(INTERVAL_S * 1000 + TIMEOUT_S * 1000 + 500)
    expect(hook.receipts).toHaveLength(MAX_ATTEMPTS)
  })

  it("a redirect is not followed: each 302 is a failed attempt and its target gets nothing", async () => {
    const elsewhere = await receiver()
    const hook = await receiver(() => ({ status: 302, headers: { location: elsewhere.url } }))
    const acct = await withWebhook(hook.url)
    const eventId = await sendTest(acct.id)
    const e = await eventWhen(acct.id, eventId, (x) => x.status === "failed")
    expect(e.attempts.map((a: any) => [a.outcome, a.status_code, a.error])).toEqual(
      Array.from({ length: MAX_ATTEMPTS }, () => ["failed", 302, "HTTP 302"])
    )
    expect(hook.receipts).toHaveLength(MAX_ATTEMPTS)
    expect(elsewhere.receipts).toHaveLength(0)
  })

  it("a key rotated while a retry is scheduled: the retry carries the new key, and the old one verifies nothing", async () => {
    const hook = await receiver((_, i) => (i === 0 ? 500 : 200))
    const acct = await withWebhook(hook.url)
    const eventId = await sendTest(acct.id)
    await hook.waitFor(1)
    // The first attempt is recorded and the second scheduled before the rotation.
    const scheduled = await eventWhen(
      acct.id,
      eventId,
      (x) => x.status === "pending" && x.attempts[0]?.outcome === "failed"
    )
    expect(scheduled.next_attempt_at).toEqual(expect.any(Number))
    const newKey = (await operator(gw).rotateWebhookKey(acct.id)).key
    expect(newKey).not.toBe(acct.webhookKey)

    const [first, second] = await hook.waitFor(2)
    expectAuthentic(first!, acct.webhookKey)
    expectAuthentic(second!, newKey)
    expect(second!.headers["webhook-id"]).toBe(eventId)
    expect(() => verifyStandardWebhook(second!, acct.webhookKey)).toThrow()
    await eventWhen(acct.id, eventId, (x) => x.status === "delivered")
  })

  it("lists events newest first with a cursor and a status filter; refuses bad queries; 404 for an unknown account", async () => {
    const hook = await receiver()
    const acct = await withWebhook(hook.url)
    const ids = [await sendTest(acct.id), await sendTest(acct.id), await sendTest(acct.id)]
    await hook.waitFor(3)
    for (const id of ids) await eventWhen(acct.id, id, (x) => x.status === "delivered")
    const all = await events(acct.id)
    expect(new Set(all.data.map((e) => e.id))).toEqual(new Set(ids))
    const createdAt = all.data.map((e) => e.created_at)
    expect(createdAt).toEqual([...createdAt].sort((a, b) => b - a))
    const page1 = await events(acct.id, { limit: 2 })
    expect(page1).toMatchObject({
      object: "list",
      has_more: true,
      first_id: page1.data[0]!.id,
      last_id: page1.data[1]!.id
    })
    const page2 = await events(acct.id, { limit: 2, after: page1.last_id! })
    expect(page2.has_more).toBe(false)
    expect([...page1.data, ...page2.data].map((e) => e.id)).toEqual(all.data.map((e) => e.id))
    expect((await events(acct.id, { status: "failed" })).data).toEqual([])
    expect((await events(acct.id, { status: "delivered" })).data).toHaveLength(3)

    expectError(
      await rawAdmin(gw, "GET", `/admin/v1/accounts/${acct.id}/webhook/events?limit=0`),
      400,
      "invalid_request"
    )
    expectError(
      await rawAdmin(gw, "GET", `/admin/v1/accounts/${acct.id}/webhook/events?colour=red`),
      400,
      "invalid_request"
    )
    expectError(await rawAdmin(gw, "GET", `/admin/v1/accounts/acct_nope/webhook/events`), 404, "account_not_found")
    expectError(await raw(gw, "GET", `/admin/v1/accounts/${acct.id}/webhook/events`), 401, "invalid_api_key")
  })
})

describe("the retry policy (an Effect Schedule, replayed from the stored failure count)", () => {
  it("3 attempts 30 s apart: due 30 s after the first and the second failure, none after the third", async () => {
    const policy = retryPolicy({ maxAttempts: 3, retryIntervalS: 30 })
    const now = 1_800_000_000_000
    const next = (failures: number) => Effect.runPromise(nextAttemptAt(policy, failures, now))
    expect(await next(1)).toEqual(Option.some(now + 30_000))
    expect(await next(2)).toEqual(Option.some(now + 30_000))
    expect(await next(3)).toEqual(Option.none())
    expect(await Effect.runPromise(nextAttemptAt(retryPolicy({ maxAttempts: 1, retryIntervalS: 30 }), 1, now))).toEqual(
      Option.none()
    )
    expect(await Effect.runPromise(nextAttemptAt(retryPolicy({ maxAttempts: 2, retryIntervalS: 0.25 }), 1, now)))
      .toEqual(Option.some(now + 250))
  })
})

describe(`private targets refused (${backend})`, { timeout: 60_000 }, () => {
  let strict: TestGateway
  beforeAll(async () => {
    const config = configWith("limits.json", (limits) => {
      limits.engine = { poll_interval_ms: 200 }
    })
    strict = await startGateway({
      ROLE: "all",
      CONFIG_DIR: config,
      ALLOW_PRIVATE_TARGETS: "false",
      WEBHOOK_MAX_ATTEMPTS: "2",
      WEBHOOK_RETRY_INTERVAL_S: "0.2",
      WEBHOOK_TIMEOUT_S: "1"
    })
  })
  afterAll(() => strict?.close())

  it("when setting the webhook, and again at delivery (a URL stored while they were allowed): no call is made", async () => {
    const hook = await receiver()
    const acct = await createAccount(strict, { name: "strict" })
    for (
      const url of [
        hook.url,
        "http://localhost:9/h",
        "http://localhost.:9/h",
        "http://10.0.0.7/h",
        "http://[::1]:9/h",
        "http://[::ffff:127.0.0.1]/h",
        "http://169.254.169.254/latest",
        "http://intranet/h"
      ]
    ) {
      expectError(
        await rawAdmin(strict, "PUT", `/admin/v1/accounts/${acct.id}/webhook`, { url }),
        400,
        "invalid_request"
      )
    }
    expect(await operator(strict).setWebhook(acct.id, { url: "https://hooks.example.com/x" }))
      .toMatchObject({ url: "https://hooks.example.com/x" })

    // The stored URL changed behind the admin API's back (set while private targets were allowed).
    await query(strict, (sql) => sql`UPDATE accounts SET webhook_url = ${hook.url} WHERE id = ${acct.id} RETURNING id`)
    const { event_id } = await operator(strict).testWebhook(acct.id)
    const e = await eventually(async () => {
      const list = await operator(strict).webhookEvents(acct.id)
      const found = list.data.find((x) => x.id === event_id)
      return found?.status === "failed" ? found : undefined
    }, "the event failed")
    expect(e.attempts).toHaveLength(2)
    for (const a of e.attempts) {
      expect(a).toMatchObject({ outcome: "failed", status_code: null, url: hook.url })
      expect(a.error).toMatch(/private, loopback and local addresses are not allowed/)
    }
    expect(hook.receipts).toHaveLength(0)
  })

  it("a public-looking name that resolves to a private address is refused when the connection is made", async () => {
    const hook = await receiver()
    const port = new URL(hook.url).port
    // A resolver under the test's control: the name passes the URL rule, its answer is loopback.
    const fakeDns = ((hostname: string, options: any, callback: any) => {
      const all: Array<LookupAddress> = hostname === "rebind.example.com"
        ? [{ address: "127.0.0.1", family: 4 }]
        : [{ address: "93.184.215.14", family: 4 }]
      return options?.all ? callback(null, all) : callback(null, all[0]!.address, all[0]!.family)
    }) as any
    const post = (allowPrivate: boolean) =>
      Effect.runPromise(
        Effect.scoped(Effect.gen(function*() {
          const client = yield* makeTargetHttpClient(allowPrivate, fakeDns)
          return yield* client.execute(HttpClientRequest.post(`http://rebind.example.com:${port}/hooks`)).pipe(
            Effect.map((r) => r.status),
            Effect.catchAll((e) => Effect.succeed(String((e as any).cause?.code ?? e)))
          )
        }))
      )
    expect(await post(false)).toBe(PRIVATE_TARGET)
    expect(hook.receipts).toHaveLength(0)
    // The same name with private targets allowed reaches the receiver: the refusal was the guard's.
    expect(await post(true)).toBe(200)
    expect(hook.receipts).toHaveLength(1)
  })

  it("the guarded lookup refuses a name when any of its addresses is not public", async () => {
    const answer = (list: Array<LookupAddress>) => ((_h: string, _o: any, cb: any) => cb(null, list)) as any
    const run = (list: Array<LookupAddress>, all: boolean) =>
      new Promise<{ code?: string; result?: unknown }>((done) =>
        guardedLookup(answer(list))(
          "x.example.com",
          { all } as any,
          (err: any, address: any, family?: number) =>
            done(err ? { code: err.code } : { result: all ? address : [address, family] })
        )
      )
    expect(await run([{ address: "93.184.215.14", family: 4 }], false)).toEqual({ result: ["93.184.215.14", 4] })
    expect(await run([{ address: "2606:2800:21f:cb07:6820:80da:af6b:8b2c", family: 6 }], true)).toEqual({
      result: [{ address: "2606:2800:21f:cb07:6820:80da:af6b:8b2c", family: 6 }]
    })
    for (
      const bad of [
        "127.0.0.1",
        "10.1.2.3",
        "192.168.1.1",
        "172.16.0.1",
        "169.254.169.254",
        "100.64.0.1",
        "::1",
        "fd00::1",
        "::ffff:10.0.0.1",
        "0.0.0.0"
      ]
    ) {
      expect(
        await run([{ address: "93.184.215.14", family: 4 }, { address: bad, family: bad.includes(":") ? 6 : 4 }], true),
        bad
      )
        .toEqual({ code: PRIVATE_TARGET })
    }
  })
})
