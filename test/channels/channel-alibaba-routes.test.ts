// Runs once: no database (the catalog's boot and the adapter's tables only)
import { NodeContext } from "@effect/platform-node"
import { ConfigProvider, Effect, Either, Exit, Layer } from "effect"
import { describe, expect, it } from "vitest"
import alibaba from "../../channels/alibaba/index.ts"
import { LINES } from "../../channels/alibaba/Models.ts"
import { createOf } from "../../channels/alibaba/Requests.ts"
import type { VideoModelCapability } from "../../src/catalog/contract/Capabilities.ts"
import { Registry } from "../../src/catalog/Registry.ts"
import type { VideoJob } from "../../src/channel/contract/Adapter.ts"
import { CatalogLive } from "../../src/Gateway.ts"
import { AppConfig } from "../../src/platform/AppConfig.ts"
import { MediaToolsLive } from "../../src/runtime/node/MediaTools.ts"
import { UpstreamHttpClientLive } from "../../src/runtime/node/UpstreamHttpClient.ts"
import { configWith } from "../support/config.ts"

/**
 * The `alibaba` adapter's tables (docs/adapters/alibaba.md, Models): a
 * route to a Wan model it does not know, to another family, or at a
 * resolution its line does not make stops the start; each line's limits are
 * the route's; the create each request kind makes on each line.
 */

const boot = (model: string, upstream: string) => {
  const dir = configWith("models.json", (m) => {
    m.channels.alibaba = { adapter: "alibaba", credentials: { api_key: { env: "K" } } }
    m.models[model].channels = [{ channel: "alibaba", upstream_model: upstream }]
  })
  const provider = ConfigProvider.fromMap(new Map(Object.entries({ CONFIG_DIR: dir, K: "sk-test" })))
  return Effect.runPromiseExit(
    Effect.map(Registry, () => "booted").pipe(
      Effect.provide(CatalogLive.pipe(
        Layer.provideMerge(AppConfig.layer),
        Layer.provide([MediaToolsLive, UpstreamHttpClientLive, NodeContext.layer]),
        Layer.provide(Layer.setConfigProvider(provider))
      ))
    )
  )
}
const messageOf = (exit: Exit.Exit<unknown, unknown>) =>
  Exit.isFailure(exit) ? String((exit.cause as any).error?.message ?? exit.cause) : "booted"

const capability = (resolution: "480p" | "720p" | "1080p") => ({ resolution }) as unknown as VideoModelCapability
const job = (upstreamModel: string, resolution: "480p" | "720p" | "1080p", over: Record<string, unknown> = {}) =>
  ({
    taskId: "vt_test",
    upstreamModel,
    capability: capability(resolution),
    request: {
      model: "provy-famW-2.5-720p",
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
    },
    readImage: () => Effect.die("not used")
  }) as unknown as VideoJob

describe("the alibaba adapter's routes", () => {
  it("boots a famW route naming either model of a known line", async () => {
    expect(messageOf(await boot("provy-famW-2.5-720p", "wan2.5-t2v-preview"))).toBe("booted")
    expect(messageOf(await boot("provy-famW-2.5-720p", "wan2.6-i2v"))).toBe("booted")
    expect(messageOf(await boot("provy-famW-2.5-480p", "wan2.2-t2v-plus"))).toBe("booted")
  })

  it("a Wan model it does not know, another family, or a resolution the line does not make stops the start", async () => {
    expect(messageOf(await boot("provy-famW-2.5-720p", "wan2.1-t2v-turbo"))).toMatch(
      /"wan2\.1-t2v-turbo" is not a Wan model this adapter knows; set upstream_model to one of wan2\.5-t2v-preview/
    )
    expect(messageOf(await boot("provx-famK-3.0-720p", "wan2.5-t2v-preview"))).toMatch(/serves famW video models only/)
    // wan2.6 makes 720p and 1080p; wan2.2 480p and 1080p.
    expect(messageOf(await boot("provy-famW-2.5-480p", "wan2.6-t2v"))).toMatch(/makes no 480p videos/)
    expect(messageOf(await boot("provy-famW-2.5-720p", "wan2.2-i2v-plus"))).toMatch(/makes no 720p videos/)
  })

  it("each line's limits are the route's: durations, resolutions, the silent line's soundtrack, no last frame", () => {
    const channel = {} as never
    const limits = (upstreamModel: string) =>
      alibaba.routeLimits!(channel, { model: "m", family: "famW", kind: "video", upstreamModel })
    expect(limits("wan2.5-i2v-preview")).toEqual({
      durations: [5, 10],
      resolutions: ["480p", "720p", "1080p"],
      lastFrame: false
    })
    expect(limits("wan2.6-t2v")).toEqual({ durations: [5, 10, 15], resolutions: ["720p", "1080p"], lastFrame: false })
    expect(limits("wan2.2-t2v-plus")).toEqual({
      durations: [5],
      resolutions: ["480p", "1080p"],
      audio: "never",
      lastFrame: false
    })
    expect(limits("sora-2")).toBeUndefined()
  })

  it("the create per line and request kind; what DashScope has no field for is refused unsent", () => {
    const frame = { image: { url: "https://example.com/first.png" }, mode: "frame" }
    expect(createOf(job("wan2.6-t2v", "1080p", { ...frame, duration: 10, generateAudio: false }), true)).toEqual(
      Either.right({
        model: "wan2.6-i2v",
        body: {
          model: "wan2.6-i2v",
          input: { prompt: "a heron", img_url: "https://example.com/first.png" },
          parameters: { resolution: "1080P", duration: 10, audio: false, watermark: true }
        }
      })
    )
    expect(createOf(job("wan2.2-i2v-plus", "480p", { aspectRatio: "1:1" }), undefined)).toEqual(
      Either.right({
        model: "wan2.2-t2v-plus",
        body: { model: "wan2.2-t2v-plus", input: { prompt: "a heron" }, parameters: { size: "624*624", duration: 5 } }
      })
    )
    for (const line of LINES) expect(createOf(job(line.t2v, "1080p"), undefined)._tag).toBe("Right")
    const lastFrame = job("wan2.5-t2v-preview", "720p", { ...frame, referenceImages: [{ url: "https://x/last.png" }] })
    expect(createOf(lastFrame, undefined)).toEqual(
      Either.left("A last frame (input.reference_images) is not supported by this video service.")
    )
    // 4:3 has no 480P size.
    expect(Either.isLeft(createOf(job("wan2.5-t2v-preview", "480p", { aspectRatio: "4:3" }), undefined))).toBe(true)
    expect(Either.isLeft(createOf(job("sora-2", "720p"), undefined))).toBe(true)
  })
})
