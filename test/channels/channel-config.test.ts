// Runs once: no database (left out of the PostgreSQL pass, vitest.config.ts).
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
import { fixtureRef } from "../support/fixtures.ts"

/**
 * The channel part of `config/models.json` checked at boot: the catalog
 * (plugins, adapters, channels and models' routes) is built as the gateway
 * builds it, without a database; each mistake stops it with a message that
 * names the field.
 */

const boot = (edit: (models: any) => void, env: Record<string, string> = {}) => {
  const dir = configWith("models.json", edit)
  const layer = CatalogLive.pipe(
    Layer.provideMerge(AppConfig.layer),
    Layer.provide([MediaToolsLive, UpstreamHttpClientLive, NodeContext.layer]),
    Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map(Object.entries({ CONFIG_DIR: dir, ...env })))))
  )
  return Effect.runPromiseExit(Effect.all({ registry: Registry, channels: Channels }).pipe(Effect.provide(layer)))
}

const refusal = async (edit: (models: any) => void, env: Record<string, string> = {}) => {
  const exit = await boot(edit, env)
  if (Exit.isSuccess(exit)) throw new Error("expected the configuration to be refused")
  return String((exit.cause as any).error?.message ?? exit.cause)
}

const echo = (over: Record<string, unknown> = {}) => ({
  adapter: fixtureRef("channels/echo"),
  color: "teal",
  credentials: { token: { env: "ECHO_TOKEN" } },
  ...over
})

describe("channels in config/models.json", () => {
  it("an unknown adapter names the channel's adapter field and where it was looked for", async () => {
    const message = await refusal((m) => (m.channels.peer = { adapter: "nope" }))
    expect(message).toMatch(
      /at channels\.peer\.adapter: adapter "nope" is unknown: no index\.ts or index\.js in .*channels\/nope/
    )
    expect(await refusal((m) => (m.channels.peer = { concurrency: 1 }))).toMatch(
      /at channels\.peer\.adapter: is missing/
    )
  })

  it("a model naming an unknown channel", async () => {
    const message = await refusal((
      m
    ) => (m.models["provx-image-1"].channels = ["sandbox", { channel: "ghost", upstream_model: "g-1" }]))
    expect(message).toMatch(/at models\.provx-image-1\.channels: unknown channel "ghost"/)
    expect(await refusal((m) => (m.models["provx-image-1"].generator = "ghost"))).toMatch(
      /at models\.provx-image-1\.generator: unknown channel "ghost"/
    )
  })

  it("a channel's narrower capability that is not narrower, or not readable", async () => {
    const narrowed =
      (narrower: unknown) => (m: any) => (m.models["provy-famS-2.0-480p"].channels = [{ channel: "sandbox", narrower }])
    const where = /at models\.provy-famS-2\.0-480p, channel "sandbox": narrower: /
    const wider = await refusal(narrowed({ durations: { min: 4, max: 20 } }))
    expect(wider).toMatch(where)
    expect(wider).toContain("durations: wider than the model's")
    expect(await refusal(narrowed({ modes: { media: { images: { min: 0, max: 99 } } } }))).toContain(
      "modes.media.images: wider than the model's"
    )
    expect(await refusal(narrowed({ modes: { images: { total: 1 } } }))).toContain(`the model has no "images" mode`)
    expect(await refusal(narrowed({ duration: { min: 4, max: 8 } }))).toMatch(/"duration".*is unexpected/s)
    expect(Exit.isSuccess(await boot(narrowed({ durations: { values: [5, 10] }, aspect_ratios: ["16:9"] })))).toBe(true)
  })

  it("a missing environment variable for a { env } secret", async () => {
    const message = await refusal((m) => (m.channels.echo = echo()))
    expect(message).toMatch(/at channels\.echo\.credentials\.token: environment variable ECHO_TOKEN is not set/)
    expect(
      await refusal((m) => (m.channels.echo = echo({ credentials: { token: "plain-text" } })), { ECHO_TOKEN: "x" })
    )
      .toMatch(/at channels\.echo\.credentials\.token: Expected \{ readonly env/)
  })

  it("an unknown setting key, common or the adapter's, and a missing required one", async () => {
    expect(await refusal((m) => (m.channels.sandbox.colour = "teal"))).toMatch(
      /at channels\.sandbox\.colour: is unexpected/
    )
    expect(await refusal((m) => (m.channels.sandbox.timeouts = { submit_s: 5, poll: 1 }))).toMatch(
      /^config models.json: invalid channel "sandbox"\n  at channels\.sandbox\.timeouts\.poll: is unexpected[^\n]*$/
    )
    expect(await refusal((m) => (m.channels.echo = echo({ color: undefined })), { ECHO_TOKEN: "x" })).toMatch(
      /at channels\.echo\.color: is missing/
    )
  })

  it("a request budget: positive rates, each operation's within the total, a share only beside a total", async () => {
    const budget = (over: Record<string, unknown>) => (m: any) => Object.assign(m.channels.sandbox, over)
    expect(await refusal(budget({ requests_per_second: 0 }))).toMatch(/at channels\.sandbox\.requests_per_second: /)
    expect(await refusal(budget({ requests_per_second: 10, requests_per_second_by_operation: { poll: 12 } })))
      .toMatch(
        /at channels\.sandbox\.requests_per_second_by_operation\.poll: 12 is more than requests_per_second \(10\)/
      )
    expect(await refusal(budget({ requests_per_second: 10, requests_per_second_by_operation: { fetch: 1 } })))
      .toMatch(/at channels\.sandbox\.requests_per_second_by_operation\.fetch: is unexpected/)
    expect(await refusal(budget({ requests_per_second_by_operation: { submit: 1 } }))).toMatch(
      /at channels\.sandbox\.requests_per_second_by_operation: needs requests_per_second/
    )
    expect(await refusal(budget({ create_share: 0.3 }))).toMatch(
      /at channels\.sandbox\.create_share: needs requests_per_second/
    )
    expect(await refusal(budget({ requests_per_second: 10, create_share: 1 }))).toMatch(
      /at channels\.sandbox\.create_share: /
    )
    const exit = await boot(budget({
      requests_per_second: 10,
      requests_per_second_by_operation: { submit: 2.5, poll: 10 },
      create_share: 0.3
    }))
    expect(Exit.isSuccess(exit)).toBe(true)
    if (Exit.isSuccess(exit)) {
      expect(exit.value.channels.get("sandbox")!.settings).toMatchObject({
        requests_per_second: 10,
        requests_per_second_by_operation: { submit: 2.5, poll: 10 },
        create_share: 0.3
      })
      // Loaded without a database: the budget, kept in the database, is not there to pace with.
      expect(exit.value.channels.budget("sandbox")).toBeUndefined()
    }
  })

  it("a channel whose adapter does not serve the model's kind", async () => {
    const message = await refusal((m) => {
      m.channels.echo = echo()
      m.models["provx-famK-3.0-720p"].channels = ["echo"]
    }, { ECHO_TOKEN: "x" })
    expect(message).toMatch(
      /at models\.provx-famK-3\.0-720p\.channels: channel "echo" \(adapter "echo"\) does not serve video models/
    )
  })

  it("older forms keep working: `generator`, a `sandbox` entry without `adapter`, no `channels` at all", async () => {
    const exit = await boot((m) => {
      m.channels = { sandbox: { concurrency: 3 } }
      m.models["provx-image-1"].generator = "sandbox"
    })
    expect(Exit.isSuccess(exit)).toBe(true)
    if (Exit.isSuccess(exit)) {
      expect(exit.value.channels.get("sandbox")!.settings).toMatchObject({
        adapter: "sandbox",
        concurrency: 3,
        url_auth: "none"
      })
      expect(exit.value.registry.image("provx-image-1")!.routes).toEqual([{
        channel: "sandbox",
        upstreamModel: "provx-image-1"
      }])
    }
    expect(Exit.isSuccess(await boot((m) => delete m.channels))).toBe(true)
    expect(
      await refusal((
        m
      ) => (m.models["provx-image-1"] = { ...m.models["provx-image-1"], generator: "sandbox", channels: ["sandbox"] }))
    )
      .toMatch(/at models\.provx-image-1\.generator: give "channels" or the older "generator", not both/)
    expect(await refusal((m) => (m.channels = { other: { adapter: "sandbox" } })))
      .toMatch(/names no channel, and there is no "sandbox" channel to default to/)
  })

  it("routes with upstream ids, and the union of the routed adapters' provider options", async () => {
    const exit = await boot((m) => {
      m.channels.echo = echo()
      m.models["provx-image-1"].channels = [{ channel: "echo", upstream_model: "echo-large" }, "sandbox"]
    }, { ECHO_TOKEN: "x" })
    expect(Exit.isSuccess(exit)).toBe(true)
    if (Exit.isSuccess(exit)) {
      const served = exit.value.registry.image("provx-image-1")!
      expect(served.routes).toEqual([{ channel: "echo", upstreamModel: "echo-large" }, {
        channel: "sandbox",
        upstreamModel: "provx-image-1"
      }])
      expect(Object.keys(served.providerOptions).sort()).toEqual(["echo", "sandbox"])
      expect(Object.keys(exit.value.registry.image("provy-image-1-fast")!.providerOptions)).toEqual(["sandbox"])
    }
  })
})
