// Runs once: no database
import { NodeContext } from "@effect/platform-node"
import { ConfigProvider, Effect, Exit, Layer } from "effect"
import { describe, expect, it } from "vitest"
import { Registry } from "../../src/catalog/Registry.ts"
import { CatalogLive } from "../../src/Gateway.ts"
import { AppConfig } from "../../src/platform/AppConfig.ts"
import { MediaToolsLive } from "../../src/runtime/node/MediaTools.ts"
import { UpstreamHttpClientLive } from "../../src/runtime/node/UpstreamHttpClient.ts"
import { configWith } from "../support/config.ts"

/**
 * A route's `cost` checked at boot (docs/configuration.md, Routes: cost): a
 * unit and a non-negative price, and a unit the route's kind has a count of,
 * from the engine (seconds of video, images, tasks) or from the provider's
 * answers (tokens, where the adapter reports them); anything else stops the
 * boot naming the route.
 */

const ENV = { ARK_KEY: "k", FAL_KEY: "k", OPENAI_KEY: "k" }

const boot = (routes: Record<string, unknown>) => {
  const dir = configWith("models.json", (m) => {
    m.channels.ark = { adapter: "ark", credentials: { api_key: { env: "ARK_KEY" } } }
    m.channels.fal = { adapter: "fal", credentials: { api_key: { env: "FAL_KEY" } } }
    m.channels.openai = {
      adapter: "openai-images",
      base_url: "https://api.openai.com/v1",
      credentials: { api_key: { env: "OPENAI_KEY" } }
    }
    for (const [model, route] of Object.entries(routes)) m.models[model].channels = [route]
  })
  const layer = CatalogLive.pipe(
    Layer.provideMerge(AppConfig.layer),
    Layer.provide([MediaToolsLive, UpstreamHttpClientLive, NodeContext.layer]),
    Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map(Object.entries({ CONFIG_DIR: dir, ...ENV })))))
  )
  return Effect.runPromiseExit(Effect.provide(Registry, layer))
}

const refusal = async (routes: Record<string, unknown>) => {
  const exit = await boot(routes)
  if (Exit.isSuccess(exit)) throw new Error("expected the configuration to be refused")
  return String((exit.cause as any).error?.message ?? exit.cause)
}

const VIDEO = "provx-famS-720p"
const FAL_VIDEO = "provx-famV-3.1-standard-720p"
const IMAGE = "provx-image-1"

describe("a route's cost in config/models.json", () => {
  it("is kept with the route: per token at Ark, per second, per image, per task", async () => {
    const exit = await boot({
      [VIDEO]: { channel: "ark", upstream_model: "seedance", cost: { unit: "token", price: 0.0000012 } },
      [FAL_VIDEO]: { channel: "fal", upstream_model: "fal-ai/veo3.1", cost: { unit: "second", price: 0.4 } },
      "provy-image-1-fast": { channel: "fal", upstream_model: "fal-ai/nano-banana", cost: { unit: "image", price: 0 } },
      [IMAGE]: { channel: "openai", upstream_model: "gpt-image-1", cost: { unit: "token", price: 0.00004 } },
      "provx-famK-3.0-720p": { channel: "sandbox", cost: { unit: "task", price: 1 } }
    })
    expect(Exit.isSuccess(exit)).toBe(true)
    if (Exit.isSuccess(exit)) {
      expect(exit.value.video(VIDEO)!.routes[0]!.cost).toEqual({ unit: "token", price: 0.0000012 })
      expect(exit.value.image(IMAGE)!.routes[0]!.cost).toEqual({ unit: "token", price: 0.00004 })
      expect(exit.value.video("provx-famS-1080p")!.routes[0]!.cost).toBeUndefined()
    }
  })

  it("a unit the kind has no count of stops the boot, naming the units it has", async () => {
    expect(await refusal({ [VIDEO]: { channel: "sandbox", cost: { unit: "image", price: 1 } } })).toMatch(
      /at models\.provx-famS-720p, channel "sandbox": cost\.unit: "image" is not counted for video tasks on the sandbox adapter \(it counts "second", "task"\)/
    )
    expect(
      await refusal({
        [IMAGE]: { channel: "fal", upstream_model: "fal-ai/nano-banana", cost: { unit: "second", price: 1 } }
      })
    )
      .toMatch(/cost\.unit: "second" is not counted for image tasks on the fal adapter/)
  })

  it("tokens where the adapter's provider reports none stop the boot", async () => {
    expect(
      await refusal({
        [FAL_VIDEO]: { channel: "fal", upstream_model: "fal-ai/veo3.1", cost: { unit: "token", price: 1 } }
      })
    ).toMatch(/channel "fal": cost\.unit: "token" is not counted for video tasks on the fal adapter/)
  })

  it("an unknown unit, a negative price or an unknown key is refused by the file's schema", async () => {
    for (
      const cost of [
        { unit: "frame", price: 1 },
        { unit: "second", price: -0.1 },
        { unit: "second" },
        { unit: "second", price: 1, currency: "USD" }
      ]
    ) {
      expect(await refusal({ [VIDEO]: { channel: "sandbox", cost } })).toMatch(/models\.json/)
    }
  })
})
