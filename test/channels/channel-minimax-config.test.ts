// Runs once: no database (the catalog's boot and the adapter's settings only)
import { NodeContext } from "@effect/platform-node"
import { ConfigProvider, Effect, Exit, Layer } from "effect"
import { describe, expect, it } from "vitest"
import { Registry } from "../../src/catalog/Registry.ts"
import { Channels } from "../../src/channel/Channels.ts"
import { CatalogLive } from "../../src/Gateway.ts"
import { AppConfig } from "../../src/platform/AppConfig.ts"
import { MediaToolsLive } from "../../src/runtime/node/MediaTools.ts"
import { UpstreamHttpClientLive } from "../../src/runtime/node/UpstreamHttpClient.ts"
import { configWith } from "../support/config.ts"

/**
 * A `minimax` channel in config/models.json, checked at start without a
 * database (docs/adapters/minimax.md, Settings): the routes it can serve
 * (MiniMax models of famH it knows), `"callbacks": true` taken (MiniMax's
 * challenge is echoed, channel-minimax-callbacks.test.ts), its own settings
 * checked.
 */

const boot = (edit: (models: any) => void) => {
  const dir = configWith("models.json", edit)
  const layer = CatalogLive.pipe(
    Layer.provideMerge(AppConfig.layer),
    Layer.provide([MediaToolsLive, UpstreamHttpClientLive, NodeContext.layer]),
    Layer.provide(
      Layer.setConfigProvider(ConfigProvider.fromMap(new Map([["CONFIG_DIR", dir], ["MINIMAX_API_KEY", "k-0123"]])))
    )
  )
  return Effect.runPromiseExit(Effect.all({ registry: Registry, channels: Channels }).pipe(Effect.provide(layer)))
}

const refusal = async (edit: (models: any) => void) => {
  const exit = await boot(edit)
  if (Exit.isSuccess(exit)) throw new Error("expected the configuration to be refused")
  return String((exit.cause as any).error?.message ?? exit.cause)
}

const channel = (over: Record<string, unknown> = {}) => ({
  adapter: "minimax",
  credentials: { api_key: { env: "MINIMAX_API_KEY" } },
  ...over
})

describe("a minimax channel in config/models.json", () => {
  it("routes famH models to the MiniMax models it knows; either region", async () => {
    const exit = await boot((m) => {
      m.channels.mm = channel()
      m.channels["mm-cn"] = channel({ region: "china" })
      m.models["provx-famH-02-768p"].channels = [{ channel: "mm", upstream_model: "MiniMax-Hailuo-02" }]
      m.models["provx-famH-02-1080p"].channels = [{ channel: "mm-cn", upstream_model: "MiniMax-Hailuo-2.3" }]
    })
    expect(Exit.isSuccess(exit)).toBe(true)
  })

  it("an unknown MiniMax model, or a model of another family, stops the start naming the known ones", async () => {
    const unknown = await refusal((m) => {
      m.channels.mm = channel()
      m.models["provx-famH-02-768p"].channels = [{ channel: "mm", upstream_model: "MiniMax-Hailuo-2.3-Fast" }]
    })
    expect(unknown).toMatch(/MiniMax-Hailuo-02, MiniMax-Hailuo-2\.3/)
    const family = await refusal((m) => {
      m.channels.mm = channel()
      const famS = Object.keys(m.models).find((id) => id.includes("famS"))!
      m.models[famS].channels = [{ channel: "mm", upstream_model: "MiniMax-Hailuo-02" }]
    })
    expect(family).toMatch(/famH/)
  })

  it("callbacks: true is taken (MiniMax's challenge is echoed); an unknown key or region is refused", async () => {
    const exit = await boot((m) => {
      m.channels.mm = channel({ callbacks: true })
      m.models["provx-famH-02-768p"].channels = [{ channel: "mm", upstream_model: "MiniMax-Hailuo-02" }]
    })
    expect(Exit.isSuccess(exit)).toBe(true)
    if (Exit.isSuccess(exit)) expect(exit.value.channels.get("mm")?.settings.callbacks).toBe(true)
    expect(await refusal((m) => (m.channels.mm = channel({ region: "europe" })))).toMatch(/region/)
    expect(await refusal((m) => (m.channels.mm = channel({ callback_url: "https://x" })))).toMatch(/callback_url/)
  })
})
