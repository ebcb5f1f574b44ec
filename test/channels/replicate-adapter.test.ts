// Runs once: no database
import { NodeContext } from "@effect/platform-node"
import { Effect, Exit, Layer, Redacted, Schema } from "effect"
import { Webhook } from "standardwebhooks"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { failuresFor, fromCreateStatus } from "../../channels/replicate/Failures.ts"
import replicate from "../../channels/replicate/index.ts"
import { cancelAfter } from "../../channels/replicate/Requests.ts"
import { type AsyncRunner, channelWarning, type VideoJob } from "../../src/channel/contract/Adapter.ts"
import { ChannelSettings } from "../../src/channel/contract/ChannelSettings.ts"
import { MediaToolsLive } from "../../src/runtime/node/MediaTools.ts"
import { UpstreamHttpClientLive } from "../../src/runtime/node/UpstreamHttpClient.ts"
import { type FakeReplicate, startFakeReplicate } from "../fakes/replicate.ts"
import { eventually } from "../support/eventually.ts"

/**
 * The `replicate` adapter's parts the engine does not drive yet or that need
 * no gateway (docs/adapters/replicate.md): cancel against the fake, the
 * webhook reader (the secret read from the fake and kept, signatures checked,
 * an unverifiable webhook a hint), `Cancel-After`'s syntax and the meaning of
 * Replicate's refusals.
 */

const TOKEN = "r8_adapter_0123456789"
let fake: FakeReplicate

beforeAll(async () => {
  fake = await startFakeReplicate([TOKEN])
})
afterAll(async () => {
  await fake?.close()
})

const channel = (base: string, more: Record<string, unknown> = {}) => ({
  name: "marketplace",
  warn: channelWarning("marketplace"),
  settings: {
    ...Schema.decodeUnknownSync(ChannelSettings)({ adapter: "replicate" }),
    base_url: base,
    credentials: { api_token: Redacted.make(TOKEN) },
    ...more
  } as any
})

const videoRunner = (more: Record<string, unknown> = {}) =>
  Effect.runPromise(
    Effect.scoped(Effect.map(replicate.make(channel(fake.url, more)), (r) => r.video as AsyncRunner<VideoJob>)).pipe(
      Effect.provide(
        Layer.mergeAll(UpstreamHttpClientLive, MediaToolsLive, NodeContext.layer).pipe(
          Layer.provideMerge(NodeContext.layer)
        )
      )
    )
  )

const job = (prompt: string): VideoJob => ({
  taskId: "task_1",
  upstreamModel: "google/veo-3.1",
  capability: { resolution: "720p", modes: {} } as any,
  request: {
    model: "provx-famV-3.1-standard-720p",
    operation: "generation",
    prompt,
    mode: null,
    image: null,
    referenceImages: [],
    referenceVideos: [],
    referenceAudios: [],
    duration: 8,
    aspectRatio: "16:9",
    generateAudio: true,
    clientReferenceId: null,
    metadata: null,
    providerOptions: {}
  },
  readImage: () => Effect.die("unused")
})

describe("the replicate adapter", () => {
  it("cancel: a waiting prediction is cancelled; an ended one is not cancellable", async () => {
    const runner = await videoRunner()
    fake.scenarios.push({ starting: Infinity }, { starting: 0, processing: 0 })
    const waiting = await Effect.runPromise(runner.submit(job("to cancel")))
    const done = await Effect.runPromise(runner.submit(job("already done")))
    const [a, b] = [waiting, done].map((o) => (o as { upstreamId: string }).upstreamId)
    // Confirmed, with what Replicate charges for it: nothing, since it never started.
    expect(await Effect.runPromise(runner.cancel!(a!))).toEqual({ _tag: "Cancelled", billed: false, usage: undefined })
    expect(fake.predictions.get(a!)!.canceled).toBe(true)
    expect(fake.requests.at(-1)).toMatchObject({ method: "POST", path: `/v1/predictions/${a}/cancel` })
    // Read once, so it has ended upstream.
    const states = await Effect.runPromise(runner.poll([a!, b!]))
    expect(states.get(a!)).toMatchObject({ _tag: "Failed", answer: { status: "canceled" } })
    expect(states.get(b!)).toMatchObject({ _tag: "Succeeded" })
    expect(await Effect.runPromise(runner.cancel!(b!))).toBe("not_cancellable")
    expect(await Effect.runPromise(runner.cancel!("nosuchprediction"))).toBe("not_cancellable")
    // A throttled cancel is an error to try again, never "cancelled".
    fake.faults.read.push({ kind: "rate_limited", retryAfter: "2" })
    const throttled = await Effect.runPromiseExit(runner.cancel!(a!))
    expect(Exit.isFailure(throttled) && (throttled.cause as any).error).toMatchObject({
      transient: true,
      retryAfterMs: 2000
    })
  })

  it("Cancel-After: a prediction abandoned past the channel's deadline stops upstream (aborted, or canceled once started)", async () => {
    const runner = await videoRunner({
      timeouts: { submit_s: 2, poll_s: 2, download_s: 10, deadline_s: 1 }
    })
    fake.scenarios.push({ starting: 1000, stepMs: 50 }, { starting: 1, processing: 1000, stepMs: 50 })
    const ids = await Promise.all(
      ["never started", "started"].map((prompt) =>
        Effect.runPromise(runner.submit(job(prompt))).then((o) => (o as { upstreamId: string }).upstreamId)
      )
    )
    for (const id of ids) expect(fake.predictions.get(id)!.cancelAfter).toBe("1s")
    const states = await eventually(async () => {
      const read = await Effect.runPromise(runner.poll(ids))
      return [...read.values()].every((s) => s._tag === "Failed") ? read : undefined
    }, "both predictions stopped upstream")
    expect(states.get(ids[0]!)).toMatchObject({ answer: { status: "aborted" }, error: { retryable: true } })
    expect(states.get(ids[1]!)).toMatchObject({ answer: { status: "canceled" } })
  })

  it("webhooks: the secret read once from Replicate, a valid signature accepted, a forged one refused", async () => {
    const reader = replicate.callbacks!(channel(fake.url))
    const body = JSON.stringify({ id: "pred123", status: "succeeded" })
    const signed = (secret: string) => {
      const at = new Date()
      return {
        "webhook-id": "msg_1",
        "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
        "webhook-signature": new Webhook(secret).sign("msg_1", at, body)
      }
    }
    const request = (headers: Record<string, string>) => ({
      headers,
      body: new TextEncoder().encode(body),
      now: Date.now()
    })
    const before = fake.requests.filter((r) => r.path === "/v1/webhooks/default/secret").length
    const hint = await Effect.runPromise(reader.read(request(signed(fake.secret))))
    expect(hint).toEqual({ upstreamIds: ["pred123"], taskIds: [] })
    await Effect.runPromise(reader.read(request(signed(fake.secret))))
    // Kept after the first read.
    expect(fake.requests.filter((r) => r.path === "/v1/webhooks/default/secret").length - before).toBe(1)
    const forged = await Effect.runPromiseExit(
      reader.read(request(signed("whsec_" + Buffer.from("not replicate's secret").toString("base64"))))
    )
    expect(Exit.isFailure(forged)).toBe(true)
    expect(Exit.isFailure(await Effect.runPromiseExit(reader.read(request({}))))).toBe(true)
  })

  it("webhooks after the account's secret was rotated: read again (at most every 5 minutes) and accepted", async () => {
    const reader = replicate.callbacks!(channel(fake.url))
    const body = JSON.stringify({ id: "pred789" })
    const at = (now: number, secret: string) => ({
      headers: {
        "webhook-id": "msg_9",
        "webhook-timestamp": String(Math.floor(now / 1000)),
        "webhook-signature": new Webhook(secret).sign("msg_9", new Date(now), body)
      },
      body: new TextEncoder().encode(body),
      now
    })
    const reads = () => fake.requests.filter((r) => r.path === "/v1/webhooks/default/secret").length
    const old = fake.secret
    const t0 = Date.now()
    const before = reads()
    await Effect.runPromise(reader.read(at(t0, old)))
    fake.secret = "whsec_" + Buffer.from("the rotated secret of the account").toString("base64")
    try {
      // A minute later the kept secret is not read again: the new signature is refused.
      expect(Exit.isFailure(await Effect.runPromiseExit(reader.read(at(t0 + 60_000, fake.secret))))).toBe(true)
      expect(reads() - before).toBe(1)
      // Past five minutes the mismatch reads the secret again and the webhook is accepted.
      const hint = await Effect.runPromise(reader.read(at(t0 + 6 * 60_000, fake.secret)))
      expect(hint.upstreamIds).toEqual(["pred789"])
      expect(reads() - before).toBe(2)
      // A signature neither secret verifies is still refused, without another read.
      const forged = at(t0 + 6 * 60_000, "whsec_" + Buffer.from("no one's secret at all").toString("base64"))
      expect(Exit.isFailure(await Effect.runPromiseExit(reader.read(forged)))).toBe(true)
      expect(reads() - before).toBe(2)
    } finally {
      fake.secret = old
    }
  })

  it("webhooks while the secret cannot be read: unverifiable, so only a hint to poll", async () => {
    const reader = replicate.callbacks!(channel("http://127.0.0.1:9/v1"))
    const body = new TextEncoder().encode(JSON.stringify({ id: "pred456" }))
    const hint = await Effect.runPromise(reader.read({ headers: {}, body, now: Date.now() }))
    expect(hint.upstreamIds).toEqual(["pred456"])
    const junk = await Effect.runPromiseExit(reader.read({ headers: {}, body: new Uint8Array([1]), now: Date.now() }))
    expect(Exit.isFailure(junk)).toBe(true)
  })

  it("the channel check: GET /account proves the token, and says what went wrong otherwise", async () => {
    const check = (base: string, token = TOKEN) =>
      Effect.runPromise(
        replicate.check!({
          ...channel(base),
          settings: {
            ...channel(base).settings,
            credentials: {
              api_token: Redacted.make(token)
            }
          }
        }, []).pipe(Effect.provide(Layer.mergeAll(UpstreamHttpClientLive, MediaToolsLive, NodeContext.layer)))
      )
    expect(await check(fake.url)).toMatchObject({ result: "ok" })
    expect(fake.requests.at(-1)).toMatchObject({ method: "GET", path: "/v1/account" })
    expect(await check(fake.url, "r8_revoked")).toMatchObject({ result: "credentials_refused" })
    expect(await check("http://127.0.0.1:9/v1")).toMatchObject({ result: "unreachable" })
  })

  it("Cancel-After in Replicate's duration syntax, and Replicate's refusals as the engine needs them", () => {
    expect([21_600, 5430, 90, 3600, 45].map(cancelAfter)).toEqual(["6h", "1h30m30s", "1m30s", "1h", "45s"])
    const f = failuresFor("video")
    const of = (status: number, body: unknown = null, headers: Record<string, string> = {}) =>
      fromCreateStatus(f, status, headers, body)
    for (const status of [401, 402, 403, 404]) {
      expect(of(status)).toMatchObject({ retryable: true, transient: false, notAccepted: true })
    }
    expect(of(422, { detail: "- input.duration: must be one of 4, 6, 8" })).toMatchObject({ retryable: false })
    expect(of(429, { detail: "Request was throttled. Your rate limit resets in ~30s." })).toMatchObject({
      transient: true,
      notAccepted: true,
      retryAfterMs: 30_000
    })
    expect(of(429, { detail: "Request was throttled." }, { "retry-after": "7" }).retryAfterMs).toBe(7000)
    expect(of(504)).toMatchObject({ transient: true, ambiguous: true })
    // Image tasks get the image codes: 524 while the service is unavailable.
    expect(fromCreateStatus(failuresFor("image"), 503, {}, null)).toMatchObject({ code: "524", transient: true })
    expect(fromCreateStatus(failuresFor("image"), 422, {}, null)).toMatchObject({ code: "image_task_failed" })
  })
})
