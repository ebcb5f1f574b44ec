import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type FakeArk, startFakeArk } from "../fakes/ark.ts"
import { type FakeFal, startFakeFal } from "../fakes/fal.ts"
import { type FakeGateway, startFakeGateway } from "../fakes/gateway.ts"
import { type FakeKling, startFakeKling } from "../fakes/kling.ts"
import { type FakeImages, startFakeImages } from "../fakes/openai-images.ts"
import { type FakeVideos, startFakeVideos } from "../fakes/openai-videos.ts"
import { type FakeReplicate, startFakeReplicate } from "../fakes/replicate.ts"
import { versionOf } from "../fakes/replicateModels.ts"
import { type FakeVeo, startFakeVeo } from "../fakes/veo.ts"
import { createAccount, operator } from "../support/adminApi.ts"
import { configWith } from "../support/config.ts"
import { backend } from "../support/database.ts"
import { eventually } from "../support/eventually.ts"
import { ADMIN_TOKEN, startGateway, type TestGateway } from "../support/gateway.ts"
import { ACCOUNT } from "../support/kling.ts"
import { samplesOf, scrape } from "../support/metrics.ts"
import { taskApi } from "../support/taskApi.ts"
import { query } from "../support/tasks.ts"
import { createAndWait, quickEngine } from "../support/upstream.ts"

/**
 * What each task cost upstream (docs/operating.md, The operator's view of a
 * task): one gateway whose models run on every adapter's fake, each route
 * with a `cost`. A task through each records the usage its fake reported (or,
 * where the provider's answer counts none, the seconds of the video or the
 * images stored), whether the provider bills it by its own rules, and the
 * cost that comes to by the route's price; `mtg_upstream_cost_total` counts
 * the billed costs by channel and model.
 */

const KEYS = {
  ark: "ark-key-0123456789abcdef",
  replicate: "r8_fake_0123456789abcdef",
  gemini: "AIzaSyFakeGeminiKey0123456789abcdefgh",
  fal: "fal-key-id:fal-key-secret-0123456789",
  videos: "sk-upstream-videos-0123456789",
  images: "sk-upstream-images-0123456789",
  gatewayToken: "sk-upstream-gateway-0123456789",
  gatewayKey: "ak_upstream-gateway-0123456789"
}
const SEEDANCE = "bytedance/seedance-1-pro"

/** Each route's cost: what its provider bills per unit, in the operator's money. */
const COSTS = {
  ark: { unit: "token", price: 0.0000012 },
  arkSeconds: { unit: "second", price: 0.1 },
  replicate: { unit: "second", price: 0.06 },
  replicateTimed: { unit: "second", price: 0.000975 },
  sandbox: { unit: "second", price: 0.001 },
  upgw: { unit: "second", price: 0.03 },
  veo: { unit: "second", price: 0.15 },
  falVideo: { unit: "second", price: 0.4 },
  falImage: { unit: "image", price: 0.039 },
  kling: { unit: "second", price: 0.084 },
  klingTask: { unit: "task", price: 0.49 },
  videos: { unit: "second", price: 0.1 },
  images: { unit: "token", price: 0.00004 }
} as const

const MODELS = {
  ark: "provx-famS-720p",
  arkSeconds: "provx-famS-1080p",
  replicate: "provy-famS-2.0-480p",
  replicateTimed: "provy-famS-2.0-720p",
  sandbox: "provy-famS-2.0-fast-480p",
  upgw: "provy-famS-2.5-480p",
  veo: "provx-famV-3.1-fast-720p",
  falVideo: "provx-famV-3.1-standard-720p",
  kling: "provx-famK-3.0-720p",
  klingTask: "provx-famK-3.0-1080p",
  videos: "provx-famK-3.0-omni-720p",
  images: "provx-image-1",
  falImage: "provy-image-1-fast"
} as const

let gw: TestGateway
let fakes: {
  ark: FakeArk
  replicate: FakeReplicate
  veo: FakeVeo
  fal: FakeFal
  kling: FakeKling
  videos: FakeVideos
  upstream: FakeGateway
  images: FakeImages
}

beforeAll(async () => {
  const [ark, replicate, veo, fal, kling, videos, upstream, images] = await Promise.all([
    startFakeArk([KEYS.ark]),
    startFakeReplicate([KEYS.replicate]),
    startFakeVeo([KEYS.gemini]),
    startFakeFal(KEYS.fal),
    startFakeKling(ACCOUNT),
    startFakeVideos(KEYS.videos),
    startFakeGateway({ modelToken: KEYS.gatewayToken, resourceKey: KEYS.gatewayKey }),
    startFakeImages(KEYS.images)
  ])
  fakes = { ark, replicate, veo, fal, kling, videos, upstream, images }
  const config = configWith("models.json", (models) => {
    const common = { concurrency: 10, timeouts: { submit_s: 3, poll_s: 2, download_s: 30 } }
    const key = (env: string) => ({ env })
    models.channels.ark = { ...common, adapter: "ark", base_url: ark.url, credentials: { api_key: key("ARK_KEY") } }
    models.channels.replicate = {
      ...common,
      adapter: "replicate",
      base_url: replicate.url,
      credentials: { api_token: key("REPLICATE_TOKEN") }
    }
    models.channels.gemini = {
      ...common,
      adapter: "veo",
      api: "gemini",
      base_url: `${veo.url}/v1beta`,
      credentials: { api_key: key("GEMINI_KEY") }
    }
    models.channels.fal = { ...common, adapter: "fal", base_url: fal.url, credentials: { api_key: key("FAL_KEY") } }
    models.channels.klingai = {
      ...common,
      adapter: "kling",
      base_url: kling.url,
      api: "current",
      credentials: { api_key: key("KLING_API_KEY") }
    }
    models.channels["klingai-jwt"] = {
      ...common,
      adapter: "kling",
      base_url: kling.url,
      api: "legacy",
      credentials: { access_key: key("KLING_AK"), secret_key: key("KLING_SK") }
    }
    models.channels.ovideos = {
      ...common,
      adapter: "openai-videos",
      base_url: videos.url,
      credentials: { api_key: key("OPENAI_VIDEOS_KEY") }
    }
    models.channels.upgw = {
      ...common,
      adapter: "gateway",
      base_url: upstream.url,
      credentials: { model_token: key("UPGW_SK"), resource_key: key("UPGW_AK") }
    }
    models.channels.openai = {
      ...common,
      adapter: "openai-images",
      base_url: images.url,
      credentials: { api_key: key("OPENAI_IMAGES_KEY") }
    }
    const route = (channel: string, upstream_model: string | undefined, cost: unknown, more = {}) => ({
      channel,
      ...(upstream_model === undefined ? {} : { upstream_model }),
      cost,
      ...more
    })
    // Seedance 1 Pro takes 2 to 12 s.
    const seedance = { narrower: { durations: { min: 4, max: 12 } } }
    const routes: Record<string, Array<unknown>> = {
      // A second route that never runs: its cost still has a series, at zero.
      [MODELS.ark]: [
        route("ark", "dreamina-seedance-2-0-260128", COSTS.ark),
        route("sandbox", undefined, COSTS.sandbox)
      ],
      [MODELS.arkSeconds]: [route("ark", "dreamina-seedance-2-0-260128", COSTS.arkSeconds)],
      [MODELS.replicate]: [route("replicate", SEEDANCE, COSTS.replicate, seedance)],
      [MODELS.replicateTimed]: [
        route("replicate", `${SEEDANCE}:${versionOf(SEEDANCE)}`, COSTS.replicateTimed, seedance)
      ],
      [MODELS.sandbox]: [route("sandbox", undefined, COSTS.sandbox)],
      [MODELS.upgw]: [route("upgw", "upstream-video-model", COSTS.upgw)],
      [MODELS.veo]: [route("gemini", "veo-3.1-fast-generate-preview", COSTS.veo)],
      [MODELS.falVideo]: [route("fal", "fal-ai/veo3.1", COSTS.falVideo)],
      [MODELS.kling]: [route("klingai", "kling-3.0", COSTS.kling)],
      [MODELS.klingTask]: [route("klingai-jwt", "kling-v3", COSTS.klingTask)],
      [MODELS.videos]: [route("ovideos", "sora-2", COSTS.videos)],
      [MODELS.images]: [route("openai", "gpt-image-1", COSTS.images)],
      [MODELS.falImage]: [route("fal", "fal-ai/nano-banana", COSTS.falImage)]
    }
    for (const [model, list] of Object.entries(routes)) models.models[model].channels = list
  })
  quickEngine(config)
  gw = await startGateway({
    ROLE: "all",
    CONFIG_DIR: config,
    ARK_KEY: KEYS.ark,
    REPLICATE_TOKEN: KEYS.replicate,
    GEMINI_KEY: KEYS.gemini,
    FAL_KEY: KEYS.fal,
    KLING_API_KEY: ACCOUNT.apiKey,
    KLING_AK: ACCOUNT.accessKey,
    KLING_SK: ACCOUNT.secretKey,
    OPENAI_VIDEOS_KEY: KEYS.videos,
    UPGW_SK: KEYS.gatewayToken,
    UPGW_AK: KEYS.gatewayKey,
    OPENAI_IMAGES_KEY: KEYS.images
  })
}, 120_000)
afterAll(async () => {
  await gw?.close()
  await Promise.all(Object.values(fakes ?? {}).map((fake) => fake.close()))
})

const video = (model: string, prompt: string, duration: number, output: Record<string, unknown> = {}) => ({
  model,
  operation: "generation",
  input: { prompt },
  output: { duration, ...output }
})

/** Seedance 1 Pro on Replicate makes silent videos only. */
const SILENT = { generate_audio: false }

/** The task's last attempt as the operator sees it (its cost in the operator's money). */
const lastAttempt = async (taskId: string) => (await operator(gw).task(taskId)).attempts.at(-1)!

/** Runs a task to its end; its status and last attempt. */
const run = async (body: Record<string, unknown>, kind: "video" | "image" = "video") => {
  const { task } = await createAndWait(gw, body, { kind, name: "costs", intervalMs: 100 })
  return { task, attempt: await lastAttempt(task.id) }
}

/** The cost of `quantity` units at `price`, as recorded: micro-units, rounded. */
const costOf = (quantity: number, price: number) => Math.round(quantity * price * 1_000_000) / 1_000_000

type Attempt = Awaited<ReturnType<typeof lastAttempt>>

/** A billed attempt: its usage as expected, and its cost by the route's price. */
const expectBilled = (attempt: Attempt, usage: Record<string, unknown>, price: number) => {
  expect(attempt.billed).toBe(true)
  expect(attempt.usage).toMatchObject(usage)
  expect(attempt.cost).toBe(costOf(attempt.usage!.quantity as number, price))
}

/** The seconds of a video the engine probed: about what was asked. */
const probedSeconds = (attempt: Attempt, asked: number) => {
  const seconds = attempt.usage!.quantity as number
  expect(seconds).toBeGreaterThan(asked - 0.2)
  expect(seconds).toBeLessThan(asked + 0.3)
}

describe(`what each task cost upstream (${backend})`, () => {
  it("ark: the completion tokens of the succeeded task, priced per token", async () => {
    fakes.ark.scenarios.push({ tokens: 98_765 })
    const { attempt, task } = await run(video(MODELS.ark, "a fox at dawn", 5))
    expect(task.status).toBe("succeeded")
    expect(attempt.outcome).toBe("succeeded")
    expectBilled(attempt, {
      unit: "token",
      quantity: 98_765,
      reported: true,
      source: "answer",
      completion_tokens: 98_765,
      total_tokens: 98_765
    }, COSTS.ark.price)
    expect(attempt.cost).toBe(costOf(98_765, COSTS.ark.price))
  })

  it("ark under a route priced per second: the seconds of the video stored, Ark's tokens kept beside", async () => {
    const { attempt } = await run(video(MODELS.arkSeconds, "a fox at noon", 5))
    expectBilled(attempt, { unit: "second", source: "outputs", completion_tokens: 108_900 }, COSTS.arkSeconds.price)
    probedSeconds(attempt, 5)
  })

  it("ark: a create whose answer is lost is recorded ambiguous, billed with what the request implies", async () => {
    fakes.ark.faults.create.push({ kind: "lost" })
    const { attempt, task } = await run(video(MODELS.arkSeconds, "a lost fox", 6))
    expect(task.status).toBe("failed")
    expect(attempt.outcome).toBe("ambiguous")
    expectBilled(attempt, { unit: "second", quantity: 6, reported: false, source: "request" }, COSTS.arkSeconds.price)
  })

  it("replicate, an official model priced per output: the seconds of the video stored", async () => {
    const { attempt } = await run(video(MODELS.replicate, "a heron", 5, SILENT))
    expectBilled(attempt, { unit: "second", reported: true, source: "outputs" }, COSTS.replicate.price)
    probedSeconds(attempt, 5)
  })

  it("replicate, a version priced by time: metrics.predict_time", async () => {
    fakes.replicate.scenarios.push({ predictTime: 12.5 })
    const { attempt } = await run(video(MODELS.replicateTimed, "a crane", 5, SILENT))
    expectBilled(attempt, {
      unit: "second",
      quantity: 12.5,
      source: "answer",
      predict_time: 12.5
    }, COSTS.replicateTimed.price)
  })

  it("replicate: a prediction cancelled after it started is billed for the time it ran", async () => {
    fakes.replicate.scenarios.push({ starting: 0, processing: Infinity, predictTime: 3.5 })
    const acct = await createAccount(gw, { name: "cancels", wallet_credits: 100 })
    const created = await taskApi(gw, acct).createVideoReply(
      video(MODELS.replicateTimed, "cancel it", 5, SILENT) as any
    )
    const id = created.task.id
    await eventually(async () => {
      const [row] = await query<{ polls: number }>(gw, (sql) => sql`SELECT polls FROM tasks WHERE id = ${id}`)
      return (row?.polls ?? 0) > 0 || undefined
    }, "the prediction is read processing")
    const reply = await taskApi(gw, acct).cancelVideo(id)
    expect(reply).toMatchObject({ status: "failed", error: { code: "task_cancelled" } })
    const attempt = await lastAttempt(id)
    expect(attempt.outcome).toBe("cancelled")
    expectBilled(attempt, { unit: "second", quantity: 3.5, source: "answer" }, COSTS.replicateTimed.price)
  })

  it("replicate: an aborted prediction (its deadline passed before it started) is not billed", async () => {
    fakes.replicate.scenarios.push({ end: "aborted" })
    const { attempt, task } = await run(video(MODELS.replicateTimed, "never started", 5, SILENT))
    expect(task.status).toBe("failed")
    expect(attempt).toMatchObject({ outcome: "failed", billed: false, cost: 0 })
    expect(attempt.usage).toMatchObject({ unit: "second", reported: false })
  })

  it("veo: the seconds of the video stored; a video blocked by the safety filter is not billed", async () => {
    const { attempt } = await run(video(MODELS.veo, "a lighthouse", 4))
    expectBilled(attempt, { unit: "second", source: "outputs" }, COSTS.veo.price)
    probedSeconds(attempt, 4)
    fakes.veo.scenarios.push({ end: "filtered" })
    const filtered = await run(video(MODELS.veo, "a filtered lighthouse", 4))
    expect(filtered.task.status).toBe("failed")
    expect(filtered.attempt).toMatchObject({ outcome: "failed", billed: false, cost: 0 })
  })

  it("fal: the seconds of the video stored; a failed run costs nothing; images counted", async () => {
    const { attempt } = await run(video(MODELS.falVideo, "a harbour", 4))
    expectBilled(attempt, { unit: "second", source: "outputs" }, COSTS.falVideo.price)
    probedSeconds(attempt, 4)
    fakes.fal.scenarios.push({ end: "runner_error" })
    const failed = await run(video(MODELS.falVideo, "a broken harbour", 4))
    expect(failed.task.status).toBe("failed")
    expect(failed.attempt).toMatchObject({ outcome: "failed", billed: false, cost: 0 })
    const images = await run({
      model: MODELS.falImage,
      operation: "generation",
      input: { prompt: "two gulls" },
      output: { size: "1024x1024", format: "png", count: 2 }
    }, "image")
    expectBilled(images.attempt, { unit: "image", quantity: 2, source: "outputs" }, COSTS.falImage.price)
  })

  it("kling (current API): the seconds its answer counts, with the units it deducted", async () => {
    const { attempt } = await run(video(MODELS.kling, "a red kite", 5))
    expectBilled(attempt, {
      unit: "second",
      quantity: 5,
      reported: true,
      source: "answer",
      billing: [{ type: "unit", amount: 5 }]
    }, COSTS.kling.price)
  })

  it("kling (legacy API) under a route priced per task: one task, its final_unit_deduction kept", async () => {
    const { attempt } = await run(video(MODELS.klingTask, "a kestrel", 5))
    expectBilled(attempt, { unit: "task", quantity: 1, final_unit_deduction: "5" }, COSTS.klingTask.price)
    expect(attempt.cost).toBe(COSTS.klingTask.price)
  })

  it("openai-videos: the seconds its video object says", async () => {
    const { attempt, task } = await run(video(MODELS.videos, "a tram at night", 8))
    expect(task.status).toBe("succeeded")
    expectBilled(attempt, { unit: "second", quantity: 8, source: "answer", seconds: "8" }, COSTS.videos.price)
  })

  it("a chained gateway: the seconds its upstream delivered", async () => {
    const { attempt } = await run(video(MODELS.upgw, "a chained fox", 6))
    expectBilled(attempt, { unit: "second", quantity: 6, source: "answer", duration_ms: 6000 }, COSTS.upgw.price)
  })

  it("openai-images: the tokens its answer counts", async () => {
    const { attempt } = await run({
      model: MODELS.images,
      operation: "generation",
      input: { prompt: "a lighthouse at dusk" },
      output: { size: "1024x1024", format: "png", count: 2 }
    }, "image")
    // The fake's usage: 50 input tokens, 1056 output tokens per image.
    expectBilled(attempt, {
      unit: "token",
      quantity: 50 + 2 * 1056,
      source: "answer",
      input_tokens: 50,
      output_tokens: 2112
    }, COSTS.images.price)
  })

  it("the sandbox: the seconds it rendered, by the route's cost", async () => {
    const { attempt } = await run(video(MODELS.sandbox, "a sandbox fox", 4))
    expectBilled(attempt, { unit: "second", source: "outputs" }, COSTS.sandbox.price)
    probedSeconds(attempt, 4)
  })

  it("mtg_upstream_cost_total: each billed cost once, by channel and model; a route that never ran at zero", async () => {
    const recorded = await query<{ channel: string; model: string; micros: number | string }>(
      gw,
      (sql) =>
        sql`SELECT a.channel, t.model, sum(a.cost_micros) AS micros FROM task_attempts a JOIN tasks t ON t.id = a.task_id
          WHERE a.billed GROUP BY a.channel, t.model`
    )
    const samples = samplesOf((await scrape(gw, ADMIN_TOKEN)).body).filter((s) => s.name === "mtg_upstream_cost_total")
    const valueOf = (channel: string, model: string) =>
      samples.find((s) => s.labels.channel === channel && s.labels.model === model)?.value
    expect(recorded.length).toBeGreaterThan(10)
    for (const { channel, micros, model } of recorded) {
      expect(valueOf(channel, model)).toBeCloseTo(Number(micros) / 1_000_000, 6)
    }
    expect(valueOf("sandbox", MODELS.ark)).toBe(0)
    for (const sample of samples) expect(Object.keys(sample.labels).sort()).toEqual(["channel", "model"])
  })
})
