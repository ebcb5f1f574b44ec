// Runs once: no database (left out of the PostgreSQL pass, vitest.config.ts).
import { NodeContext } from "@effect/platform-node"
import { ApiError, createFalClient, ValidationError } from "@fal-ai/client"
import { ConfigProvider, Effect, Exit, Layer } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { falCallbacks } from "../../channels/fal/Callbacks.ts"
import { appsOf, BUILT_IN } from "../../channels/fal/Endpoints.ts"
import { Registry } from "../../src/catalog/Registry.ts"
import { Channels } from "../../src/channel/Channels.ts"
import type { AsyncRunner, CallbackHint } from "../../src/channel/contract/Adapter.ts"
import { CatalogLive } from "../../src/Gateway.ts"
import { AppConfig } from "../../src/platform/AppConfig.ts"
import { MediaToolsLive } from "../../src/runtime/node/MediaTools.ts"
import { UpstreamHttpClientLive } from "../../src/runtime/node/UpstreamHttpClient.ts"
import { type FakeFal, startFakeFal, webhookHeaders } from "../fakes/fal.ts"
import { configWith } from "../support/config.ts"
import { FAL_KEY } from "../support/fal.ts"

/**
 * The fal protocol itself (docs/adapters/fal.md, Tests): the fake driven by
 * fal's official client (`@fal-ai/client` 1.10.1), so it cannot drift from
 * what fal's own code sends and expects; the adapter's cancel; its webhook
 * verification against fal's ED25519 signatures; and the boot check of a
 * route's endpoint.
 */

let fake: FakeFal
beforeAll(async () => {
  fake = await startFakeFal(FAL_KEY)
})
afterAll(() => fake?.close())

const KLING_T2V = "fal-ai/kling-video/v3/pro/text-to-video"

/** fal's official client, its `queue.fal.run` calls sent to the fake instead. */
const officialClient = () =>
  createFalClient({
    credentials: FAL_KEY,
    requestMiddleware: async (request) => ({ ...request, url: request.url.replace("https://queue.fal.run", fake.url) })
  })

/** The queue apps of the built-in endpoints, which a webhook may name. */
const APPS = appsOf(BUILT_IN)

const layerOf = (edit: (models: any) => void, env: Record<string, string> = {}) => {
  const dir = configWith("models.json", edit)
  return CatalogLive.pipe(
    Layer.provideMerge(AppConfig.layer),
    Layer.provide([MediaToolsLive, UpstreamHttpClientLive, NodeContext.layer]),
    Layer.provide(
      Layer.setConfigProvider(
        ConfigProvider.fromMap(new Map(Object.entries({ CONFIG_DIR: dir, FAL_KEY, ...env })))
      )
    )
  )
}

const falChannel = (url: string) => ({
  adapter: "fal",
  base_url: url,
  credentials: { api_key: { env: "FAL_KEY" } },
  timeouts: { poll_s: 2, submit_s: 2 }
})

/** The `fal` channel's video runner, made as the engine makes it. */
const videoRunner = () =>
  Effect.runPromise(
    Effect.gen(function*() {
      const channels = yield* Channels
      const runner = yield* channels.runner("fal")
      return runner["video"] as AsyncRunner<unknown>
    }).pipe(Effect.provide(layerOf((models) => {
      models.channels.fal = falChannel(fake.url)
    })))
  )

const refusal = async (edit: (models: any) => void) => {
  const exit = await Effect.runPromiseExit(Effect.all({ registry: Registry }).pipe(Effect.provide(layerOf(edit))))
  if (Exit.isSuccess(exit)) throw new Error("expected the configuration to be refused")
  return String((exit.cause as any).error?.message ?? exit.cause)
}

/** Queues a request on the fake directly, as any fal client would; its upstream id as the adapter stores it. */
const queueOne = async (scenario: Parameters<FakeFal["scenarios"]["push"]>[0] = {}) => {
  fake.scenarios.push(scenario)
  const answer = await fetch(`${fake.url}/${KLING_T2V}`, {
    method: "POST",
    headers: { authorization: `Key ${FAL_KEY}`, "content-type": "application/json" },
    body: JSON.stringify({ prompt: "a fox", duration: "5" })
  })
  const body = await answer.json() as { request_id: string }
  return { requestId: body.request_id, upstreamId: `fal-ai/kling-video/requests/${body.request_id}` }
}

describe("the fake fal queue, driven by @fal-ai/client", () => {
  it("submit, status without the subpath, result: as the official client does them", async () => {
    const fal = officialClient()
    const { request_id } = await fal.queue.submit(KLING_T2V, { input: { prompt: "a fox", duration: "5" } })
    const done = await fal.queue.subscribeToStatus(KLING_T2V, { requestId: request_id, pollInterval: 10 })
    expect(done.status).toBe("COMPLETED")
    // The client asks under `owner/alias` only: the fake answers there and nowhere else.
    const paths = fake.requests.filter((r) => r.path.includes(request_id)).map((r) => r.path)
    expect(paths.every((p) => p.startsWith("/fal-ai/kling-video/requests/"))).toBe(true)
    const result = await fal.queue.result(KLING_T2V, { requestId: request_id })
    expect(result.requestId).toBe(request_id)
    expect((result.data as any).video).toMatchObject({ content_type: "video/mp4" })
    expect(fake.requests.find((r) => r.method === "POST" && r.path === `/${KLING_T2V}`)!.headers.authorization)
      .toBe(`Key ${FAL_KEY}`)
  })

  it("a bad input is accepted at submit and refused at the result fetch with 422, as the client reads it", async () => {
    const fal = officialClient()
    const { request_id } = await fal.queue.submit(KLING_T2V, { input: { prompt: "a fox", duration: 5 } as any })
    const status = await fal.queue.subscribeToStatus(KLING_T2V, { requestId: request_id, pollInterval: 10 })
    expect(status.status).toBe("COMPLETED")
    const failure = await fal.queue.result(KLING_T2V, { requestId: request_id }).catch((e) => e)
    expect(failure).toBeInstanceOf(ValidationError)
    expect(failure.status).toBe(422)
    expect(failure.body.detail[0]).toMatchObject({ loc: ["body", "duration"], type: "literal_error" })
  })

  it("cancel: accepted while queued (the result then fails), refused once completed", async () => {
    const fal = officialClient()
    fake.scenarios.push({ queued: 50 })
    const { request_id } = await fal.queue.submit(KLING_T2V, { input: { prompt: "a fox" } })
    await fal.queue.cancel(KLING_T2V, { requestId: request_id })
    expect(await fal.queue.result(KLING_T2V, { requestId: request_id }).catch((e) => e)).toBeInstanceOf(ApiError)
    const second = await fal.queue.cancel(KLING_T2V, { requestId: request_id }).catch((e) => e)
    expect(second).toBeInstanceOf(ApiError)
    expect(second.status).toBe(400)
  })

  it("429 and HTML pages are what the client sees as errors", async () => {
    const fal = officialClient()
    // The client retries 429 itself (three times): four refusals reach it.
    fake.faults.submit.push(...Array.from({ length: 4 }, () => ({ kind: "rate_limited" as const, retryAfter: "0" })))
    const throttled = await fal.queue.submit(KLING_T2V, { input: { prompt: "a fox" } }).catch((e) => e)
    expect(throttled).toBeInstanceOf(ApiError)
    expect(throttled.status).toBe(429)
    fake.faults.submit.length = 0
  }, 30_000)
})

describe("the fal adapter's cancel", () => {
  it("cancelled while queued; the poll then reports the request failed, retryable", async () => {
    const runner = await videoRunner()
    const { upstreamId, requestId } = await queueOne({ queued: 50 })
    expect(await Effect.runPromise(runner.cancel!(upstreamId))).toBe("cancelled")
    expect(fake.queued.get(requestId)!.cancelled).toBe(true)
    const cancelCall = fake.requests.at(-1)!
    expect(cancelCall).toMatchObject({ method: "PUT", path: `/${upstreamId}/cancel` })
    const state = (await Effect.runPromise(runner.poll([upstreamId]))).get(upstreamId) as any
    expect(state._tag).toBe("Failed")
    expect(state.error).toMatchObject({ code: "video_task_failed", retryable: true })
  })

  it("not_cancellable once completed, or for a request fal does not know", async () => {
    const runner = await videoRunner()
    const { upstreamId } = await queueOne({ queued: 0, running: 0 })
    expect(await Effect.runPromise(runner.cancel!(upstreamId))).toBe("not_cancellable")
    expect(await Effect.runPromise(runner.cancel!("fal-ai/kling-video/requests/no-such-request"))).toBe(
      "not_cancellable"
    )
  })
})

describe("fal webhooks (ED25519)", () => {
  const body = (requestId: string) =>
    JSON.stringify({ request_id: requestId, gateway_request_id: requestId, status: "OK", payload: {} })
  const read = (jwks: string, headers: Record<string, string>, text: string) =>
    Effect.runPromiseExit(
      falCallbacks(jwks, APPS).read({ headers, body: new TextEncoder().encode(text), now: Date.now() })
    )
  const hintOf = (exit: Exit.Exit<CallbackHint, unknown>) => Exit.isSuccess(exit) ? exit.value : undefined
  const refusedWhy = (exit: Exit.Exit<CallbackHint, unknown>) =>
    Exit.isFailure(exit) ? String((exit.cause as any).error?.reason) : "accepted"

  it("a delivery signed as fal signs it names the request under every app the adapter knows", async () => {
    const jwks = `${fake.url}/.well-known/jwks.json`
    const text = body("req-123")
    const hint = hintOf(await read(jwks, webhookHeaders("req-123", text), text))
    expect(hint?.upstreamIds).toEqual(APPS.map((app) => `${app}/requests/req-123`))
    expect(hint?.upstreamIds).toContain("fal-ai/kling-video/requests/req-123")
  })

  it("refuses a wrong key, a stale timestamp, no signature, a changed body, another request's body", async () => {
    const jwks = `${fake.url}/.well-known/jwks.json`
    const text = body("req-9")
    const { generateKeyPairSync } = await import("node:crypto")
    const stranger = generateKeyPairSync("ed25519").privateKey
    expect(refusedWhy(await read(jwks, webhookHeaders("req-9", text, { key: stranger }), text))).toMatch(/verifies/)
    expect(refusedWhy(await read(jwks, webhookHeaders("req-9", text, { ageS: 600 }), text))).toMatch(/stale/)
    expect(refusedWhy(await read(jwks, {}, text))).toMatch(/missing/)
    expect(refusedWhy(await read(jwks, webhookHeaders("req-9", text), body("req-10")))).toMatch(/verifies/)
    const other = body("req-10")
    expect(refusedWhy(await read(jwks, webhookHeaders("req-9", other), other))).toMatch(/not the signed one/)
  })

  it("fal's keys are read once for many deliveries, a failing signature included (at most every 5 minutes)", async () => {
    const callbacks = falCallbacks(`${fake.url}/.well-known/jwks.json`, APPS)
    const before = fake.jwksReads.count
    const { generateKeyPairSync } = await import("node:crypto")
    const stranger = generateKeyPairSync("ed25519").privateKey
    for (const [i, key] of [undefined, stranger, undefined, stranger].entries()) {
      const text = body(`req-many-${i}`)
      const headers = webhookHeaders(`req-many-${i}`, text, key === undefined ? {} : { key })
      const exit = await Effect.runPromiseExit(
        callbacks.read({ headers, body: new TextEncoder().encode(text), now: Date.now() })
      )
      expect(Exit.isSuccess(exit)).toBe(key === undefined)
    }
    expect(fake.jwksReads.count - before).toBe(1)
  })

  it("an unreadable JWKS is not asked again per delivery: each delivery is a hint, one read in 5 minutes", async () => {
    fake.jwksReads.down = true
    try {
      const callbacks = falCallbacks(`${fake.url}/.well-known/jwks.json`, APPS)
      const before = fake.jwksReads.count
      for (const i of [1, 2, 3]) {
        const text = body(`req-down-${i}`)
        const exit = await Effect.runPromiseExit(
          callbacks.read({
            headers: webhookHeaders(`req-down-${i}`, text),
            body: new TextEncoder().encode(text),
            now: Date.now()
          })
        )
        expect(Exit.isSuccess(exit)).toBe(true)
      }
      expect(fake.jwksReads.count - before).toBe(1)
    } finally {
      fake.jwksReads.down = false
    }
  })

  it("when fal's keys cannot be read, a signed delivery cannot be verified and only hastens the poll", async () => {
    const text = body("req-77")
    const hint = hintOf(await read("http://127.0.0.1:9/jwks.json", webhookHeaders("req-77", text), text))
    expect(hint?.upstreamIds).toContain("fal-ai/veo3.1/requests/req-77")
  })
})

describe("routes to the fal adapter, checked at boot", () => {
  it("an endpoint the adapter does not know stops the start, naming the known ones of the family", async () => {
    const why = await refusal((models) => {
      models.channels.fal = falChannel("http://127.0.0.1:9")
      models.models["provx-famK-3.0-720p"].channels = [{ channel: "fal", upstream_model: "fal-ai/kling-video/v9" }]
    })
    expect(why).toContain(`at models.provx-famK-3.0-720p, channel "fal": upstream_model "fal-ai/kling-video/v9"`)
    expect(why).toContain("fal-ai/kling-video/v3/pro/text-to-video, fal-ai/kling-video/v3/pro/image-to-video")
  })

  it("an endpoint of another family, or a route without upstream_model, stops the start too", async () => {
    expect(
      await refusal((models) => {
        models.channels.fal = falChannel("http://127.0.0.1:9")
        models.models["provx-famS-720p"].channels = [{ channel: "fal", upstream_model: "fal-ai/veo3.1" }]
      })
    ).toContain(
      `was written for famV requests; the endpoints for famS it knows: fal-ai/bytedance/seedance/v1.5/pro/text-to-video, fal-ai/bytedance/seedance/v1.5/pro/image-to-video, and a channel's "endpoints" setting adds one`
    )
    expect(
      await refusal((models) => {
        models.channels.fal = falChannel("http://127.0.0.1:9")
        models.models["provx-image-1"].channels = ["fal"]
      })
    ).toContain(`upstream_model "provx-image-1": is not a fal endpoint this channel knows; the endpoints for image`)
  })
})
