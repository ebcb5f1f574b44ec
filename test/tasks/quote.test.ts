import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Registry } from "../../src/catalog/Registry.ts"
import { GatewayError } from "../../src/client/Errors.ts"
import type { ImageTaskRequest, VideoTaskRequest } from "../../src/client/Tasks.ts"
import { createAccount, operator } from "../support/adminApi.ts"
import { api } from "../support/api.ts"
import { unthrottled } from "../support/config.ts"
import { backend } from "../support/database.ts"
import { startGateway, type TestGateway } from "../support/gateway.ts"
import { errorOf, expectError, raw } from "../support/http.ts"
import { refused, taskApi } from "../support/taskApi.ts"
import { ledgerOf, query, videoRequest } from "../support/tasks.ts"

let gw: TestGateway
beforeAll(async () => {
  gw = await startGateway({ CONFIG_DIR: unthrottled() })
})
afterAll(() => gw?.close())

type Case =
  | { readonly kind: "video"; readonly body: VideoTaskRequest }
  | { readonly kind: "image"; readonly body: ImageTaskRequest }

/** A typed call's status: the contract's success status, or the status of the `GatewayError` it rejected with. */
const settled = <A>(call: Promise<A>, success: number) =>
  call.then((value) => ({ status: success, value }), (error: unknown) => {
    if (error instanceof GatewayError) return { status: error.status, value: undefined }
    throw error
  })

const quoteOf = (key: string, c: Case) =>
  c.kind === "video" ? taskApi(gw, { model: key }).quoteVideo(c.body) : taskApi(gw, { model: key }).quoteImage(c.body)
const createOf = (key: string, c: Case) =>
  c.kind === "video"
    ? api(gw, { model: key }).createVideoReply(c.body)
    : api(gw, { model: key }).createImageReply(c.body)

// Raw: what the create and the quote must both refuse, sent as it is.
const quote = (kind: "video" | "image", key: string, json: unknown) =>
  raw(gw, "POST", `/v1/${kind}/tasks/quote`, { key, json })
const create = (kind: "video" | "image", key: string, json: unknown) =>
  raw(gw, "POST", `/v1/${kind}/tasks`, { key, json })
const taskCount = async (accountId: string) =>
  (await query<{ n: number }>(gw, (sql) => sql`SELECT count(*)::int AS n FROM tasks WHERE account_id = ${accountId}`))[
    0
  ]!
    .n
const balances = async (accountId: string) => {
  const account = await operator(gw).account(accountId)
  return { wallet: account.wallet_credits, subscription: account.subscription_credits }
}

/** The ends of each model's duration table (video) or count range (images): what the quote and the create meet on. */
const cases = async (): Promise<Array<Case>> => {
  const registry = await gw.runtime.runPromise(Registry)
  const video = registry.videoModels.flatMap((m) => {
    const d = m.capability.durations
    const ends = "values" in d ? [d.values[0]!, d.values.at(-1)!] : [d.min, d.max]
    return [...new Set(ends)].map((duration) => ({
      kind: "video" as const,
      body: videoRequest({ model: m.capability.id, output: { duration } })
    }))
  })
  const image = registry.imageModels.flatMap((m) =>
    [...new Set([m.capability.count.min, m.capability.count.max])].map((count) => ({
      kind: "image" as const,
      body: { model: m.capability.id, operation: "generation" as const, input: { prompt: "a kite" }, output: { count } }
    }))
  )
  return [...video, ...image]
}

describe(`quotes (${backend})`, () => {
  it("quote == the create's actual charge, over every model, three groups, both ends of durations and counts", async () => {
    const all = await cases()
    expect(all.length).toBeGreaterThan(20)
    let compared = 0
    for (const group of ["default", "vip", "auto"]) {
      // A subscription balance that runs out along the way, so both splits (all subscription, part wallet) occur.
      const acct = await createAccount(gw, { name: `q-${group}`, group, wallet_credits: 1000, subscription_credits: 3 })
      for (const one of all) {
        const { body, kind } = one
        const quoted = await settled(quoteOf(acct.model.key, one), 200)
        const created = await createOf(acct.model.key, one).then(
          (reply) => ({ status: reply.status, id: reply.task.id }),
          (error: unknown) => {
            if (error instanceof GatewayError) return { status: error.status, id: undefined }
            throw error
          }
        )
        expect(quoted.status === 200 ? 202 : quoted.status, JSON.stringify(body)).toBe(created.status)
        if (created.status !== 202 || created.id === undefined) continue
        const q = quoted.value!
        expect(q).toMatchObject({ object: "task.quote", model: body.model, operation: body.operation })
        expect(q.enough_balance).toBe(true)
        const [charge] = await ledgerOf(gw, created.id)
        expect(charge!.kind).toBe("charge")
        const charged = {
          wallet: (0 - charge!.wallet_micros) / 1e6,
          subscription: (0 - charge!.subscription_micros) / 1e6
        }
        expect(q.charge).toEqual(charged)
        expect(q.billing.credits).toBeCloseTo(charged.wallet + charged.subscription, 6)
        expect(q.billing.unit).toBe(kind === "video" ? "second" : "image")
        expect(q.billing.quantity).toBe(one.kind === "video" ? one.body.output.duration : one.body.output?.count)
        expect(q.billing.multiplier).toBe(group === "default" ? 1 : 0.8)
        compared++
      }
    }
    expect(compared).toBeGreaterThanOrEqual(all.length * 3 - 3)
  })

  it("creates nothing and charges nothing; a short balance is enough_balance false, not 402", async () => {
    const acct = await createAccount(gw, { name: "short", wallet_credits: 0.1, subscription_credits: 0.05 })
    const before = await balances(acct.id)
    const body = videoRequest({ model: "provy-famS-2.0-480p", output: { duration: 10 } })
    // A 200: the typed client decodes the contract's answer or fails.
    const quoted = await taskApi(gw, acct).quoteVideo(body)
    expect(quoted).toEqual({
      object: "task.quote",
      model: "provy-famS-2.0-480p",
      operation: "generation",
      billing: { unit: "second", quantity: 10, unit_price: 0.04, multiplier: 1, credits: 0.4 },
      charge: { wallet: 0.35, subscription: 0.05 },
      balance: { wallet: 0.1, subscription: 0.05 },
      enough_balance: false,
      queue: { queued: 0, max_queued: null, room: true },
      spend: { spent_today: 0, spent_this_month: 0, daily_limit: null, monthly_limit: null, room: true }
    })
    expect(await taskCount(acct.id)).toBe(0)
    expect(await balances(acct.id)).toEqual(before)
    await refused(api(gw, acct).createVideo(body), 402, "insufficient_balance")
    // A model whose price the subscription may not pay: all from the wallet.
    const noSub = await taskApi(gw, acct).quoteVideo(
      videoRequest({ model: "provx-famV-3.1-standard-720p", output: { duration: 4 } })
    )
    expect(noSub.charge.subscription).toBe(0)
    expect(noSub.charge.wallet).toBe(noSub.billing.credits)
    // An Idempotency-Key is not read: two quotes with one key both answer, and nothing is stored.
    // Raw: the quote's contract has no such header, so the typed client would not send it.
    const keyed = await raw(gw, "POST", "/v1/video/tasks/quote", {
      key: acct.model.key,
      json: body,
      headers: { "idempotency-key": "k1" }
    })
    expect(keyed.status).toBe(200)
    expect(await taskCount(acct.id)).toBe(0)
  })

  it("every 400 the create answers, the quote answers alike; keys as for the create", async () => {
    const acct = await createAccount(gw, { name: "bad", wallet_credits: 100 })
    const video = videoRequest()
    const videoCases: Array<unknown> = [
      { ...video, model: "nope" },
      { ...video, operation: "remix" },
      { ...video, output: {} },
      { ...video, output: { duration: 99 } },
      { ...video, output: { duration: 4, aspect_ratio: "2:1" } },
      { ...video, input: { prompt: "x", reference_mode: "telepathy" } },
      { ...video, output: { duration: 4, resolution: "8k" } },
      { ...video, provider_options: { nobody: {} } },
      { ...video, input: { prompt: "" } },
      { ...video, input: { prompt: "x\u0000y" } },
      { ...video, metadata: "not an object" },
      [],
      "text"
    ]
    const image = { model: "provx-image-1", operation: "generation", input: { prompt: "a cat" } }
    const imageCases: Array<unknown> = [
      { ...image, model: "nope" },
      { ...image, output: { size: "100x100" } },
      { ...image, output: { count: 0 } },
      { ...image, operation: "edit" },
      { ...image, provider_options: { other: {} } },
      { ...image, input: { prompt: "x", images: [{ url: "ftp://example.com/a.png" }] } }
    ]
    const codes = new Set<string>()
    for (const [kind, list] of [["video", videoCases], ["image", imageCases]] as const) {
      for (const json of list) {
        const created = await create(kind, acct.model.key, json)
        const quoted = await quote(kind, acct.model.key, json)
        expect(created.status, JSON.stringify(json)).toBe(400)
        const code = String(errorOf(created.body)?.code)
        expectError(quoted, 400, code)
        codes.add(code)
      }
    }
    expect(codes.size).toBeGreaterThanOrEqual(8)
    for (const kind of ["video", "image"] as const) {
      const malformed = await raw(gw, "POST", `/v1/${kind}/tasks/quote`, {
        key: acct.model.key,
        body: "{not json",
        headers: { "content-type": "application/json" }
      })
      const malformedCreate = await raw(gw, "POST", `/v1/${kind}/tasks`, {
        key: acct.model.key,
        body: "{not json",
        headers: { "content-type": "application/json" }
      })
      expectError(malformed, 400, String(errorOf(malformedCreate.body)?.code))
    }
    expect(await taskCount(acct.id)).toBe(0)
    expect((await quote("video", acct.resource.key, video)).status).toBe(403)
    expectError(await quote("video", "sk-nope", video), 401, "invalid_api_key")
  })
})
