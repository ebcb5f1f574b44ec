// Runs once: no database (left out of the PostgreSQL pass, vitest.config.ts).
import { NodeContext } from "@effect/platform-node"
import RunwayML from "@runwayml/sdk"
import { ConfigProvider, Effect, Exit, Layer } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Registry } from "../../src/catalog/Registry.ts"
import { Channels } from "../../src/channel/Channels.ts"
import type { AsyncRunner, UpstreamState } from "../../src/channel/contract/Adapter.ts"
import { CatalogLive } from "../../src/Gateway.ts"
import { AppConfig } from "../../src/platform/AppConfig.ts"
import { MediaToolsLive } from "../../src/runtime/node/MediaTools.ts"
import { UpstreamHttpClientLive } from "../../src/runtime/node/UpstreamHttpClient.ts"
import { type FakeRunway, type Life, startFakeRunway } from "../fakes/runway.ts"
import { configWith } from "../support/config.ts"
import { KEY } from "../support/runway.ts"

/**
 * Runway's protocol at the adapter's runner (docs/adapters/runway.md,
 * Protocol and Tests): states read from the fake's tasks (made with Runway's
 * own SDK), Runway's charge, cancel of an ended task refused without a
 * DELETE, forget deleting an ended task, and the routes the start refuses
 * (a model the adapter does not know, a resolution or durations it does not
 * make).
 */

let fake: FakeRunway
beforeAll(async () => {
  fake = await startFakeRunway(KEY)
})
afterAll(() => fake?.close())

const sdk = () => new RunwayML({ apiKey: KEY, baseURL: fake.url, maxRetries: 0 })

const layerOf = (edit: (models: any) => void) => {
  const dir = configWith("models.json", edit)
  return CatalogLive.pipe(
    Layer.provideMerge(AppConfig.layer),
    Layer.provide([MediaToolsLive, UpstreamHttpClientLive, NodeContext.layer]),
    Layer.provide(
      Layer.setConfigProvider(
        ConfigProvider.fromMap(new Map(Object.entries({ CONFIG_DIR: dir, RUNWAY_KEY: KEY })))
      )
    )
  )
}

const runwayChannel = (url: string) => ({
  adapter: "runway",
  base_url: url,
  credentials: { api_key: { env: "RUNWAY_KEY" } },
  timeouts: { poll_s: 2, submit_s: 2 }
})

/** The `runway` channel's video runner, made as the engine makes it. */
const videoRunner = () =>
  Effect.runPromise(
    Effect.gen(function*() {
      const channels = yield* Channels
      const runner = yield* channels.runner("runway")
      return runner["video"] as AsyncRunner<unknown>
    }).pipe(Effect.provide(layerOf((models) => {
      models.channels.runway = runwayChannel(fake.url)
    })))
  )

const run = <A>(effect: Effect.Effect<A, unknown>) => Effect.runPromise(effect)

/** Why the start refuses a configuration. */
const refusal = async (edit: (models: any) => void) => {
  const exit = await Effect.runPromiseExit(Effect.all({ registry: Registry }).pipe(Effect.provide(layerOf(edit))))
  if (Exit.isSuccess(exit)) throw new Error("expected the configuration to be refused")
  return String((exit.cause as any).error?.message ?? exit.cause)
}

/** A task made on the fake with Runway's SDK, living as `statuses` say. */
const task = async (prompt: string, statuses: Life["statuses"], more: Partial<Life> = {}) => {
  fake.lives.push({ prompt, statuses, ...more })
  return (await sdk().textToVideo.create({ model: "gen4.5", promptText: prompt, ratio: "1280:720", duration: 5 })).id
}

describe("the runway runner against the fake", () => {
  it("reads each status; a success is billed by its cost, a failure with none is not; an unknown id is left out", async () => {
    const runner = await videoRunner()
    const [queued, throttled, running, done, failed] = await Promise.all([
      task("queued", ["PENDING"]),
      task("throttled", ["THROTTLED"]),
      task("running", ["RUNNING"]),
      task("done", ["SUCCEEDED"]),
      task("failed", ["FAILED"], { failureCode: "SAFETY.OUTPUT.VIDEO", failure: "output rejected" })
    ])
    const unknown = "00000000-0000-0000-0000-000000000000"
    const states = await run(runner.poll([queued!, throttled!, running!, done!, failed!, unknown]))
    expect(states.size).toBe(5)
    expect(states.get(queued!)).toMatchObject({ _tag: "Pending", progress: 0 })
    expect(states.get(throttled!)).toMatchObject({ _tag: "Pending", progress: 0 })
    expect(states.get(running!)).toMatchObject({ _tag: "Pending", progress: 50 })
    const success = states.get(done!) as Extract<UpstreamState, { _tag: "Succeeded" }>
    expect(success).toMatchObject({ _tag: "Succeeded", billed: true })
    expect(success.results).toEqual([{ url: `${fake.url}/outputs/${done}.mp4`, mimeType: "video/mp4" }])
    const failure = states.get(failed!) as Extract<UpstreamState, { _tag: "Failed" }>
    expect(failure).toMatchObject({ _tag: "Failed", billed: false })
    expect(failure.error).toMatchObject({ code: "video_task_failed", retryable: false })
    expect(failure.error.upstream).toMatchObject({ code: "SAFETY.OUTPUT.VIDEO", message: "output rejected" })
  })

  it("cancel: an ended task is not cancellable and gets no DELETE; an unknown one neither; a pending one is", async () => {
    const runner = await videoRunner()
    const done = await task("ended before the cancel", ["SUCCEEDED"])
    await run(runner.poll([done!]))
    const deletes = () => fake.requests.filter((q) => q.method === "DELETE").length
    const before = deletes()
    expect(await run(runner.cancel!(done!))).toBe("not_cancellable")
    expect(await run(runner.cancel!("00000000-0000-0000-0000-000000000001"))).toBe("not_cancellable")
    expect(deletes()).toBe(before)
    expect(fake.tasks.get(done!)!.deleted).toBe(false)
    const waiting = await task("pending when cancelled", ["PENDING"])
    expect(await run(runner.cancel!(waiting!))).toBe("cancelled")
    expect(fake.tasks.get(waiting!)!.cancelled).toBe(true)
    expect(deletes()).toBe(before + 1)
  })

  it("forget deletes an ended task, then finds it gone", async () => {
    const runner = await videoRunner()
    const done = await task("done and forgotten", ["SUCCEEDED"])
    await run(runner.poll([done!]))
    expect(await run(runner.forget!(done!))).toBe("deleted")
    expect(fake.tasks.get(done!)!.deleted).toBe(true)
    expect(await run(runner.forget!(done!))).toBe("gone")
  })
})

describe("routes the start refuses", () => {
  it("a model the adapter does not know, naming the ones it knows", async () => {
    const why = await refusal((models) => {
      models.channels.runway = runwayChannel("http://127.0.0.1:9")
      models.models["provx-famK-3.0-720p"].channels = [{ channel: "runway", upstream_model: "gen3a_turbo" }]
    })
    expect(why).toContain("the runway adapter does not know this Runway model; it knows gen4_turbo, gen4.5, veo3.1")
  })

  it("a 1080p model on Gen-4, which makes 720p only", async () => {
    const why = await refusal((models) => {
      models.channels.runway = runwayChannel("http://127.0.0.1:9")
      models.models["provx-famK-3.0-1080p"].channels = [{ channel: "runway", upstream_model: "gen4_turbo" }]
    })
    expect(why).toContain("its upstream makes no 1080p videos (it makes 720p)")
  })

  it("famV (4, 6 or 8 s) on gen4_turbo (5 or 10 s): no duration in common", async () => {
    const why = await refusal((models) => {
      models.channels.runway = runwayChannel("http://127.0.0.1:9")
      models.models["provx-famV-3.1-fast-720p"].channels = [{ channel: "runway", upstream_model: "gen4_turbo" }]
    })
    expect(why).toContain("its upstream takes none of the model's durations (it takes 5, 10 s)")
  })
})
