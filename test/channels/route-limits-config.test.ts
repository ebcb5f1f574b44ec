// Runs once: no database (left out of the PostgreSQL pass, vitest.config.ts).
import { NodeContext } from "@effect/platform-node"
import { ConfigProvider, Effect, Either, Exit, Layer } from "effect"
import { describe, expect, it } from "vitest"
import { limitsOf, type VideoEndpoint } from "../../channels/fal/Endpoints.ts"
import type { ValidVideoRequest } from "../../src/catalog/contract/Requests.ts"
import { narrowRoute } from "../../src/catalog/Narrower.ts"
import { Registry } from "../../src/catalog/Registry.ts"
import { routeRefusal } from "../../src/catalog/VideoRequest.ts"
import { CatalogLive } from "../../src/Gateway.ts"
import { AppConfig } from "../../src/platform/AppConfig.ts"
import { MediaToolsLive } from "../../src/runtime/node/MediaTools.ts"
import { UpstreamHttpClientLive } from "../../src/runtime/node/UpstreamHttpClient.ts"
import { configWith } from "../support/config.ts"

/**
 * What a route takes, read at boot (catalog/Narrower.ts): its adapter's
 * knowledge of the upstream (fal's and Replicate's endpoint tables) as the
 * default, narrowed by the route's `narrower`, never widened; and how a
 * request is judged against it (VideoRequest.ts `routeRefusal`), the same
 * judgement admission and failover make.
 */

const ENV = { FAL_KEY: "fal-key-id:secret", REPLICATE_TOKEN: "r8_test" }
const SEEDANCE_REPLICATE = { channel: "replicate", upstream_model: "bytedance/seedance-1-pro" }

const boot = (routes: Record<string, ReadonlyArray<unknown>>) => {
  const dir = configWith("models.json", (models) => {
    models.channels.fal = { adapter: "fal", credentials: { api_key: { env: "FAL_KEY" } } }
    models.channels.replicate = { adapter: "replicate", credentials: { api_token: { env: "REPLICATE_TOKEN" } } }
    for (const [model, list] of Object.entries(routes)) models.models[model].channels = list
  })
  const layer = CatalogLive.pipe(
    Layer.provideMerge(AppConfig.layer),
    Layer.provide([MediaToolsLive, UpstreamHttpClientLive, NodeContext.layer]),
    Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map(Object.entries({ CONFIG_DIR: dir, ...ENV })))))
  )
  return Effect.runPromiseExit(Effect.provide(Registry, layer))
}

const registry = async (routes: Record<string, ReadonlyArray<unknown>>) => {
  const exit = await boot(routes)
  if (Exit.isFailure(exit)) throw new Error(`expected the configuration to boot: ${String(exit.cause)}`)
  return exit.value
}

const refusal = async (routes: Record<string, ReadonlyArray<unknown>>) => {
  const exit = await boot(routes)
  if (Exit.isSuccess(exit)) throw new Error("expected the configuration to be refused")
  return String((exit.cause as any).error?.message ?? exit.cause)
}

const request = (over: Partial<ValidVideoRequest> = {}): ValidVideoRequest => ({
  model: "provx-famS-720p",
  operation: "generation",
  prompt: "a heron",
  mode: null,
  image: null,
  referenceImages: [],
  referenceVideos: [],
  referenceAudios: [],
  duration: 5,
  aspectRatio: "16:9",
  generateAudio: true,
  clientReferenceId: null,
  metadata: null,
  providerOptions: {},
  ...over
})

describe("what a route takes, read at boot", () => {
  it("Replicate's Seedance: silent only and 4 to 12 s by default, from the adapter's table", async () => {
    const served = (await registry({ "provx-famS-720p": [SEEDANCE_REPLICATE] })).video("provx-famS-720p")!
    const route = served.routes[0]!
    expect(route.limits).toEqual({ audio: "never", lastFrame: true })
    expect(route.capability?.durations).toEqual({ min: 4, max: 12 })
    // The model's own table is unchanged: /v1/models and the first validation read it.
    expect(served.capability.durations).toEqual({ min: 4, max: 15 })

    const loud = routeRefusal(route, request())
    expect(loud).toMatchObject({ code: "invalid_video_parameter" })
    expect(loud?.message).toMatch(/"output\.generate_audio" must be false/)
    expect(routeRefusal(route, request({ generateAudio: false }))).toBeUndefined()
    expect(routeRefusal(route, request({ generateAudio: false, duration: 14 }))).toMatchObject({
      code: "invalid_video_duration",
      message: expect.stringContaining("4 to 12")
    })
  })

  it("a fal route with a generate_audio switch has no soundtrack limit; `audio: \"always\"` on the route adds one", async () => {
    const kling = { channel: "fal", upstream_model: "fal-ai/kling-video/v3/pro/text-to-video" }
    const built = await registry({
      "provx-famK-3.0-720p": [kling],
      "provx-famK-3.0-1080p": [{ ...kling, narrower: { audio: "always" } }]
    })
    const plain = built.video("provx-famK-3.0-720p")!.routes[0]!
    expect(plain.limits?.audio).toBeUndefined()
    expect(routeRefusal(plain, request({ model: "provx-famK-3.0-720p", generateAudio: false }))).toBeUndefined()
    const always = built.video("provx-famK-3.0-1080p")!.routes[0]!
    expect(always.limits).toEqual({ audio: "always", lastFrame: true })
    const quiet = routeRefusal(always, request({ model: "provx-famK-3.0-1080p", generateAudio: false }))
    expect(quiet).toMatchObject({ code: "invalid_video_parameter" })
    expect(quiet?.message).toMatch(/"output\.generate_audio" must be true/)
    expect(routeRefusal(always, request({ model: "provx-famK-3.0-1080p" }))).toBeUndefined()
  })

  it("`last_frame: false` refuses a first and a last frame, not a first frame alone", async () => {
    const route = (await registry({
      "provx-famS-720p": [{ channel: "sandbox", narrower: { last_frame: false } }]
    })).video("provx-famS-720p")!.routes[0]!
    const first = { url: "https://example.com/a.png" }
    expect(routeRefusal(route, request({ mode: "frame", image: first }))).toBeUndefined()
    const both = routeRefusal(route, request({ mode: "frame", image: first, referenceImages: [first] }))
    expect(both).toMatchObject({ code: "invalid_video_parameter" })
    expect(both?.message).toMatch(/last frame/)
    // In `media` mode images carry no place: not a last frame.
    expect(routeRefusal(route, request({ mode: "media", image: first, referenceImages: [first] }))).toBeUndefined()
  })

  it("a route's narrower may narrow its adapter's limits, never widen or contradict them", async () => {
    const where = /at models\.provx-famS-720p, channel "replicate": narrower: /
    const wider = await refusal({
      "provx-famS-720p": [{ ...SEEDANCE_REPLICATE, narrower: { durations: { min: 4, max: 15 } } }]
    })
    expect(wider).toMatch(where)
    expect(wider).toContain("durations: wider than its upstream takes (4 to 12 s)")
    const loud = await refusal({ "provx-famS-720p": [{ ...SEEDANCE_REPLICATE, narrower: { audio: "always" } }] })
    expect(loud).toMatch(where)
    expect(loud).toContain(`audio: "always", but its upstream's videos are always silent`)
    expect(await refusal({ "provx-famS-720p": [{ channel: "sandbox", narrower: { audio: "sometimes" } }] })).toMatch(
      /narrower: [\s\S]*audio/
    )
    expect(await refusal({ "provx-famS-720p": [{ channel: "sandbox", narrower: { last_frame: true } }] })).toMatch(
      /narrower: [\s\S]*last_frame/
    )
    const narrowed = (await registry({
      "provx-famS-720p": [{ ...SEEDANCE_REPLICATE, narrower: { durations: { values: [5, 10] }, audio: "never" } }]
    })).video("provx-famS-720p")!.routes[0]!
    expect(narrowed.capability?.durations).toEqual({ values: [5, 10] })
    expect(narrowed.limits).toEqual({ audio: "never", lastFrame: true })
  })
})

describe("an upstream that makes no video of the model's resolution", () => {
  it("stops the start, naming the resolutions it makes", async () => {
    const famS = (await registry({})).video("provy-famS-2.0-480p")!.capability
    const refused = narrowRoute(famS, { resolutions: ["720p", "1080p"] }, undefined)
    expect(refused).toEqual(Either.left("its upstream makes no 480p videos (it makes 720p, 1080p)"))
    expect(narrowRoute(famS, { resolutions: ["480p", "720p"] }, undefined)).toEqual(Either.right(undefined))
  })
})

describe("fal's endpoint table as a route's limits", () => {
  const endpoint = (over: Partial<VideoEndpoint>): VideoEndpoint => ({
    kind: "video",
    family: "famS",
    line: { text: "fal-ai/x/text-to-video", image: "fal-ai/x/image-to-video" },
    durations: [5, 10],
    duration: String,
    aspectRatios: ["16:9"],
    audio: "switch",
    seed: false,
    negativePrompt: false,
    options: {},
    ...over
  })

  it("an endpoint with no audio switch that always makes sound, or never, limits the soundtrack; a switch does not", () => {
    expect(limitsOf(endpoint({ audio: "always" }), endpoint({ audio: "always" }), undefined)).toMatchObject({
      audio: "always"
    })
    expect(limitsOf(endpoint({ audio: "never" }), endpoint({ audio: "never" }), undefined)).toMatchObject({
      audio: "never"
    })
    expect(limitsOf(endpoint({}), endpoint({}), undefined)).not.toHaveProperty("audio")
  })

  it("durations and ratios of the line's text endpoint; a last frame only where the line takes one", () => {
    const text = endpoint({})
    const noLast = endpoint({ firstFrame: "image_url" })
    expect(limitsOf(text, text, noLast)).toEqual({ durations: [5, 10], aspectRatios: ["16:9"], lastFrame: false })
    const withLast = endpoint({ firstFrame: "image_url", lastFrame: "end_image_url" })
    expect(limitsOf(text, text, withLast).lastFrame).toBe(true)
    const firstLast = endpoint({ line: { ...text.line, firstLast: "fal-ai/x/first-last-frame-to-video" } })
    expect(limitsOf(firstLast, firstLast, noLast).lastFrame).toBe(true)
  })
})
