// Runs once: no database (left out of the PostgreSQL pass, vitest.config.ts).
import { NodeContext } from "@effect/platform-node"
import { ConfigProvider, Effect, Exit, Layer } from "effect"
import LumaAI from "lumaai"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { lumaCallbacks } from "../../channels/luma/Callbacks.ts"
import { Registry } from "../../src/catalog/Registry.ts"
import { Channels } from "../../src/channel/Channels.ts"
import type { AsyncRunner, CallbackHint, UpstreamState } from "../../src/channel/contract/Adapter.ts"
import { CatalogLive } from "../../src/Gateway.ts"
import { AppConfig } from "../../src/platform/AppConfig.ts"
import { MediaToolsLive } from "../../src/runtime/node/MediaTools.ts"
import { UpstreamHttpClientLive } from "../../src/runtime/node/UpstreamHttpClient.ts"
import { type FakeLuma, startFakeLuma } from "../fakes/luma.ts"
import { configWith } from "../support/config.ts"
import { eventually } from "../support/eventually.ts"
import { LUMA_KEY } from "../support/luma.ts"
import { probeBytes } from "../support/media.ts"

/**
 * Luma's protocol itself (docs/adapters/luma.md, Tests): the fake driven by
 * Luma's official client (`lumaai` 1.19.1), so it cannot drift from what
 * Luma's own code sends and expects; the adapter's cancel, forget, list and
 * callbacks against the fake; and the start's refusal of a route Luma
 * cannot serve (an unknown model, a family of none of Luma's durations, a
 * resolution it does not make).
 */

let fake: FakeLuma
beforeAll(async () => {
  fake = await startFakeLuma(LUMA_KEY)
})
afterAll(() => fake?.close())

const client = (authToken = LUMA_KEY) => new LumaAI({ authToken, baseURL: fake.url, maxRetries: 0 })

const layerOf = (edit: (models: any) => void) => {
  const dir = configWith("models.json", edit)
  return CatalogLive.pipe(
    Layer.provideMerge(AppConfig.layer),
    Layer.provide([MediaToolsLive, UpstreamHttpClientLive, NodeContext.layer]),
    Layer.provide(
      Layer.setConfigProvider(
        ConfigProvider.fromMap(new Map(Object.entries({ CONFIG_DIR: dir, LUMAAI_API_KEY: LUMA_KEY })))
      )
    )
  )
}

const lumaChannel = (url: string) => ({
  adapter: "luma",
  base_url: url,
  credentials: { api_key: { env: "LUMAAI_API_KEY" } },
  timeouts: { poll_s: 2, submit_s: 2 }
})

/** The `luma` channel's video runner, made as the engine makes it. */
const videoRunner = () =>
  Effect.runPromise(
    Effect.gen(function*() {
      const channels = yield* Channels
      const runner = yield* channels.runner("luma")
      return runner["video"] as AsyncRunner<unknown>
    }).pipe(Effect.provide(layerOf((models) => {
      models.channels.luma = lumaChannel(fake.url)
    })))
  )

/** Why the start refuses a configuration. */
const refusal = async (edit: (models: any) => void) => {
  const exit = await Effect.runPromiseExit(Effect.all({ registry: Registry }).pipe(Effect.provide(layerOf(edit))))
  if (Exit.isSuccess(exit)) throw new Error("expected the configuration to be refused")
  return String((exit.cause as any).error?.message ?? exit.cause)
}

/** A generation made on the fake directly with Luma's client, living as `states` say. */
const generation = async (prompt: string, states: FakeLuma["lives"][number]["states"], stepMs = 50) => {
  fake.lives.push({ prompt, states, stepMs })
  const made = await client().generations.create({ model: "ray-2", prompt, duration: "5s", resolution: "720p" })
  return made.id!
}

describe("the fake Dream Machine API, driven by lumaai", () => {
  it("create with a first-frame keyframe, get until completed, the video a real MP4, delete it", async () => {
    const luma = client()
    const made = await luma.generations.create({
      model: "ray-2",
      prompt: "a tiger walking in snow",
      aspect_ratio: "16:9",
      resolution: "720p",
      duration: "5s",
      keyframes: { frame0: { type: "image", url: "https://example.com/tiger.jpg" } }
    })
    expect(made).toMatchObject({ state: "queued", model: "ray-2", generation_type: "video" })
    // The client sends where Luma's API reference says, with the key as a bearer token.
    const sent = fake.requests.find((r) => r.method === "POST" && r.body?.prompt === "a tiger walking in snow")!
    expect(sent).toMatchObject({ path: "/dream-machine/v1/generations/video" })
    expect(sent.headers.authorization).toBe(`Bearer ${LUMA_KEY}`)
    expect(sent.body.keyframes).toEqual({ frame0: { type: "image", url: "https://example.com/tiger.jpg" } })

    const done = await eventually(
      async () => {
        const now = await luma.generations.get(made.id!)
        return now.state === "completed" ? now : undefined
      },
      "the generation completes",
      { intervalMs: 50 }
    )
    expect(done.request).toMatchObject({ duration: "5s", resolution: "720p", aspect_ratio: "16:9" })
    const bytes = new Uint8Array(await (await fetch(done.assets!.video!)).arrayBuffer())
    expect((await probeBytes(bytes)).video).toMatchObject({ codec: "h264", width: 1280, height: 720 })

    const listed = await luma.generations.list({ limit: 100 })
    expect(listed.generations.map((g) => g.id)).toContain(made.id)
    expect((await luma.credits.get()).credit_balance).toBeGreaterThan(0)
    expect(await luma.ping.check()).toEqual({ message: "pong" })

    await luma.generations.delete(made.id!)
    const gone = await luma.generations.get(made.id!).catch((e) => e)
    expect(gone).toBeInstanceOf(LumaAI.NotFoundError)
    expect(gone.error).toEqual({ detail: "Generation not found" })
  })

  it("what the client sees as errors: a wrong key (401), Luma's validation (400), a 429", async () => {
    const wrong = await client("luma-someone-else").generations.list().catch((e) => e)
    expect(wrong).toBeInstanceOf(LumaAI.AuthenticationError)
    expect(wrong.error).toEqual({ detail: "Invalid API key is provided" })
    const invalid = await client().generations.create({ model: "ray-2", prompt: "a fox", duration: "7s" })
      .catch((e) => e)
    expect(invalid).toBeInstanceOf(LumaAI.BadRequestError)
    const short = await client().generations.create({ model: "ray-2", prompt: "ab" }).catch((e) => e)
    expect(short.error).toEqual({ detail: "Prompt is too short, minimum length is 3 characters" })
    fake.faults.create.push({ kind: "rate_limited", retryAfter: "2" })
    const throttled = await client().generations.create({ model: "ray-2", prompt: "a fox" }).catch((e) => e)
    expect(throttled).toBeInstanceOf(LumaAI.RateLimitError)
    expect(throttled.headers["retry-after"]).toBe("2")
  })
})

describe("the luma adapter against the fake", () => {
  const run = <A>(effect: Effect.Effect<A, unknown>) => Effect.runPromise(effect)

  it("cancel deletes a queued generation; one dreaming, or one Luma does not know, is not cancellable", async () => {
    const runner = await videoRunner()
    const queued = await generation("queued for good", ["queued"])
    expect(await run(runner.cancel!(queued))).toMatchObject({ _tag: "Cancelled", billed: true })
    expect(fake.generations.get(queued)!.deleted).toBe(true)
    const dreaming = await generation("dreaming for good", ["dreaming"])
    expect(await run(runner.cancel!(dreaming))).toBe("not_cancellable")
    expect(fake.generations.get(dreaming)!.deleted).toBe(false)
    expect(await run(runner.cancel!("00000000-0000-0000-0000-000000000000"))).toBe("not_cancellable")
  })

  it("polls read Luma's states; forget deletes a finished generation, then finds it gone", async () => {
    const runner = await videoRunner()
    const id = await generation("done and forgotten", ["completed"])
    const states = await run(runner.poll([id, "00000000-0000-0000-0000-000000000001"]))
    const state = states.get(id) as Extract<UpstreamState, { _tag: "Succeeded" }>
    expect(state._tag).toBe("Succeeded")
    expect(state.results).toEqual([{
      url: `${fake.url.replace("/dream-machine/v1", "")}/cdn/${id}/video.mp4`,
      mimeType: "video/mp4"
    }])
    expect(state.usage).toMatchObject({ unit: "second", quantity: 5 })
    // A generation Luma does not know is left out (Unknown), polled again until the deadline.
    expect(states.size).toBe(1)
    expect(await run(runner.forget!(id))).toBe("deleted")
    expect(await run(runner.forget!(id))).toBe("gone")
  })

  it("list reads Luma's record of the window, of the routed models only", async () => {
    const runner = await videoRunner()
    const from = Date.now()
    const ours = await generation("listed for reconciliation", ["completed"])
    await client().generations.create({ model: "ray-flash-2", prompt: "another model's" })
    const listed = await run(runner.list!({ from, to: Date.now() + 1000, upstreamModels: ["ray-2"] }))
    expect(listed.map((t) => t.upstreamId)).toEqual([ours])
    expect(listed[0]).toMatchObject({ model: "ray-2", status: "completed", billed: true })
  })

  it("a callback names the generation it carries; a body that is not a generation is refused", async () => {
    const read = (body: unknown) =>
      Effect.runPromiseExit(
        lumaCallbacks.read({ headers: {}, body: new TextEncoder().encode(JSON.stringify(body)), now: Date.now() })
      )
    const id = "5f1c3c3e-2b6a-4f0e-9a52-0d6f0d7e8a11"
    const hint = await read({ id, state: "completed", assets: { video: "https://example.com/v.mp4" } })
    expect(Exit.isSuccess(hint) && hint.value).toEqual({ upstreamIds: [id], taskIds: [] } satisfies CallbackHint)
    for (const body of [{ hello: "world" }, { id: "../../etc", state: "completed" }, { id }, "text"]) {
      expect(Exit.isFailure(await read(body))).toBe(true)
    }
  })
})

describe("routes the start refuses", () => {
  it("a model Luma does not have, naming the ones the adapter knows", async () => {
    const why = await refusal((models) => {
      models.channels.luma = lumaChannel("http://127.0.0.1:9")
      models.models["provx-famS-720p"].channels = [{ channel: "luma", upstream_model: "ray-9" }]
    })
    expect(why).toContain(`"ray-9" is not a Luma video model this adapter knows; it knows ray-2, ray-flash-2`)
  })

  it("famV (4, 6 or 8 s) on Ray 2 (5 or 9 s): no duration in common", async () => {
    const why = await refusal((models) => {
      models.channels.luma = lumaChannel("http://127.0.0.1:9")
      models.models["provx-famV-3.1-fast-720p"].channels = [{ channel: "luma", upstream_model: "ray-2" }]
    })
    expect(why).toContain("its upstream takes none of the model's durations (it takes 5, 9 s)")
  })

  it("a 480p model: Luma makes 540p, 720p, 1080p and 4k", async () => {
    const why = await refusal((models) => {
      models.channels.luma = lumaChannel("http://127.0.0.1:9")
      models.models["provy-famS-2.0-480p"].channels = [{ channel: "luma", upstream_model: "ray-flash-2" }]
    })
    expect(why).toContain("its upstream makes no 480p videos (it makes 540p, 720p, 1080p, 4k)")
  })
})
