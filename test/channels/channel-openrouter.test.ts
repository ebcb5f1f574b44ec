import { NodeContext } from "@effect/platform-node"
import { ConfigProvider, Effect, Exit, Layer } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Registry } from "../../src/catalog/Registry.ts"
import { CatalogLive } from "../../src/Gateway.ts"
import { AppConfig } from "../../src/platform/AppConfig.ts"
import { MediaToolsLive } from "../../src/runtime/node/MediaTools.ts"
import { UpstreamHttpClientLive } from "../../src/runtime/node/UpstreamHttpClient.ts"
import { adminApi, createAccount, operator } from "../support/adminApi.ts"
import { api } from "../support/api.ts"
import { configWith } from "../support/config.ts"
import { backend } from "../support/database.ts"
import { eventually } from "../support/eventually.ts"
import { errorOf, raw } from "../support/http.ts"
import { probeBytes } from "../support/media.ts"
import {
  engineRow,
  expectChargedOnce,
  expectNothingUpstream,
  expectRefunded,
  OPENROUTER_KEY,
  type OpenRouterSetup,
  runOpenRouter,
  startOpenRouterGateway
} from "../support/openrouter.ts"
import { refused, taskApi } from "../support/taskApi.ts"
import { query } from "../support/tasks.ts"
import { makeImage, startMediaServer } from "../support/uploads.ts"

/**
 * The `openrouter` adapter against a fake OpenRouter speaking its video API
 * over HTTP (docs/adapters/openrouter.md): per family (famV on Veo 3.1, famK
 * on Kling 3.0) a text-only and a first-frame task, each one job whose create
 * is checked literally (the fake refuses anything OpenRouter would), its
 * video fetched through the content endpoint with the key, re-hosted by the
 * gateway and playable; what a route cannot take refused at creation, nothing
 * charged or sent; a cancel OpenRouter has no way to make; a 429 and a 5xx
 * handled with one job; the channel check. Job failures and the other faults:
 * channel-openrouter-faults.test.ts.
 */

const FAMV_FAST = "provx-famV-3.1-fast-720p"
const FAMV = "provx-famV-3.1-standard-1080p"
const FAMV_LITE = "provx-famV-3.1-fast-1080p"
const FAMK = "provx-famK-3.0-720p"
const FAMK_PRO = "provx-famK-3.0-1080p"
const REFERER = "https://media-gateway.example.com"
const TITLE = "Media Task Gateway"

let r: OpenRouterSetup
let media: Awaited<ReturnType<typeof startMediaServer>>

const route = (upstream_model: string, narrower?: unknown) => [
  { channel: "aggregator", upstream_model, ...(narrower ? { narrower } : {}) }
]

beforeAll(async () => {
  const [png, png2] = await Promise.all([makeImage("png"), makeImage("png", "80x60")])
  media = await startMediaServer({
    "/first.png": { body: png, type: "image/png" },
    "/last.png": { body: png2, type: "image/png" }
  })
  r = await startOpenRouterGateway({
    [FAMV_FAST]: route("google/veo-3.1-fast"),
    [FAMV]: route("google/veo-3.1"),
    [FAMV_LITE]: route("google/veo-3.1-lite"),
    [FAMK]: route("kwaivgi/kling-v3.0-std"),
    [FAMK_PRO]: route("kwaivgi/kling-v3.0-pro")
  }, { http_referer: REFERER, app_title: TITLE })
}, 60_000)
afterAll(async () => {
  await r?.close()
  await media?.close()
})

const download = async (url: string) => {
  // Re-hosted: served by the gateway itself, never OpenRouter's content endpoint.
  expect(new URL(url).origin).toBe(r.gw.url)
  return probeBytes(new Uint8Array(await (await fetch(url)).arrayBuffer()))
}

const video = (model: string, input: Record<string, unknown>, output: Record<string, unknown> = {}, more = {}) => ({
  model,
  operation: "generation",
  input,
  output: { duration: 4, ...output },
  ...more
})

/** The requests of one job after its create: its status reads and its content downloads. */
const readsOf = (id: string) => ({
  polls: r.fake.requests.filter((q) => q.path === `/api/v1/videos/${id}`),
  contents: r.fake.requests.filter((q) => q.path === `/api/v1/videos/${id}/content`)
})

describe(`the openrouter channel: requests and results (${backend})`, () => {
  it("famV text only on veo-3.1-fast: the create OpenRouter documents, the key and attribution, one job", async () => {
    const { creates, seen, task } = await runOpenRouter(
      r,
      video(FAMV_FAST, { prompt: "a lighthouse" }, { duration: 8 })
    )
    expect(task.status).toBe("succeeded")
    expect(seen.some((t) => t.status === "in_progress")).toBe(true)
    expect(creates).toHaveLength(1)
    const [create] = creates
    expect(create!.headers.authorization).toBe(`Bearer ${OPENROUTER_KEY}`)
    expect(create!.headers["content-type"]).toMatch(/^application\/json/)
    expect(create!.headers["http-referer"]).toBe(REFERER)
    expect(create!.headers["x-openrouter-title"]).toBe(TITLE)
    expect(create!.headers["x-title"]).toBe(TITLE)
    expect(create!.body).toEqual({
      model: "google/veo-3.1-fast",
      prompt: "a lighthouse",
      duration: 8,
      aspect_ratio: "16:9",
      resolution: "720p",
      generate_audio: true
    })
    expect(r.fake.jobs.size).toBeGreaterThanOrEqual(1)
    const id = (await engineRow(r.gw, task.id)).upstream_id!
    expect(r.fake.jobs.get(id)?.body.prompt).toBe("a lighthouse")
    // The bytes come from the content endpoint, index 0, with the key.
    const { contents, polls } = readsOf(id)
    expect(polls.length).toBeGreaterThanOrEqual(3)
    expect(contents.length).toBeGreaterThanOrEqual(1)
    expect(contents[0]!.query.get("index")).toBe("0")
    expect(contents[0]!.headers.authorization).toBe(`Bearer ${OPENROUTER_KEY}`)
    const probed = await download(task.result!.videos[0].url)
    expect(probed.video).toMatchObject({ codec: "h264", width: 160, height: 90 })
    expect(probed.audio?.codec).toBe("aac")
    expect(probed.durationS).toBeGreaterThan(7.8)
    expectNothingUpstream(r, task)
    await expectChargedOnce(r.gw, task.id)
    // Operators see the job and what OpenRouter charged for it.
    const view = await operator(r.gw).task(task.id)
    expect(view.attempts[0]).toMatchObject({ channel: "aggregator", outcome: "succeeded" })
    expect(view.attempts[0]?.last_answer).toMatchObject({ id, status: "completed" })
    expect(view.attempts[0]?.usage).toMatchObject({ unit: "task", quantity: 1, cost_usd: 0.4, is_byok: false })
  })

  it("famV first frame on veo-3.1: `frame_images` with `first_frame`, `seed`, 1080p, no soundtrack", async () => {
    const url = `${media.url}/first.png`
    const { creates, task } = await runOpenRouter(
      r,
      video(FAMV, { prompt: "waves", reference_mode: "frame", image: { url } }, {
        duration: 6,
        aspect_ratio: "9:16",
        generate_audio: false
      }, { provider_options: { famV: { seed: 7 } } })
    )
    expect(task.status).toBe("succeeded")
    expect(creates).toHaveLength(1)
    expect(creates[0]!.body).toEqual({
      model: "google/veo-3.1",
      prompt: "waves",
      frame_images: [{ type: "image_url", image_url: { url }, frame_type: "first_frame" }],
      duration: 6,
      aspect_ratio: "9:16",
      resolution: "1080p",
      generate_audio: false,
      seed: 7
    })
    const probed = await download(task.result!.videos[0].url)
    expect(probed.video).toMatchObject({ width: 90, height: 160 })
    expect(probed.audio).toBeUndefined()
    expectNothingUpstream(r, task)
  })

  it("famV first and last frame, and three reference images as `input_references`", async () => {
    const [first, last] = [`${media.url}/first.png`, `${media.url}/last.png`]
    const framed = await runOpenRouter(
      r,
      video(FAMV, {
        prompt: "day to night",
        reference_mode: "frame",
        image: { url: first },
        reference_images: [{ url: last }]
      })
    )
    expect(framed.task.status).toBe("succeeded")
    expect(framed.creates[0]!.body.frame_images).toEqual([
      { type: "image_url", image_url: { url: first }, frame_type: "first_frame" },
      { type: "image_url", image_url: { url: last }, frame_type: "last_frame" }
    ])
    const refs = [first, last, first]
    const referenced = await runOpenRouter(
      r,
      video(FAMV, { prompt: "@a meets @b", reference_mode: "images", reference_images: refs.map((url) => ({ url })) }, {
        duration: 8
      })
    )
    expect(referenced.task.status).toBe("succeeded")
    expect(referenced.creates).toHaveLength(1)
    expect(referenced.creates[0]!.body.input_references).toEqual(
      refs.map((url) => ({ type: "image_url", image_url: { url } }))
    )
    expect(referenced.creates[0]!.body.frame_images).toBeUndefined()
  })

  it("famK text only on kling-v3.0-std: integer seconds, the ratio, the soundtrack switch, no resolution", async () => {
    const { creates, task } = await runOpenRouter(
      r,
      video(FAMK, { prompt: "a paper boat" }, { duration: 5, aspect_ratio: "9:16" })
    )
    expect(task.status).toBe("succeeded")
    expect(creates).toHaveLength(1)
    expect(creates[0]!.body).toEqual({
      model: "kwaivgi/kling-v3.0-std",
      prompt: "a paper boat",
      duration: 5,
      aspect_ratio: "9:16",
      generate_audio: true
    })
    const probed = await download(task.result!.videos[0].url)
    expect(probed.video).toMatchObject({ width: 90, height: 160 })
    expect(probed.durationS).toBeGreaterThan(4.8)
    expect(probed.audio?.codec).toBe("aac")
    expectNothingUpstream(r, task)
  })

  it("famK first frame on kling-v3.0-pro: `frame_images` with `first_frame`", async () => {
    const url = `${media.url}/first.png`
    const { creates, task } = await runOpenRouter(
      r,
      video(FAMK_PRO, { prompt: "the keeper waves", image: { url } }, { duration: 10, generate_audio: false })
    )
    expect(task.status).toBe("succeeded")
    expect(creates).toHaveLength(1)
    expect(creates[0]!.body).toEqual({
      model: "kwaivgi/kling-v3.0-pro",
      prompt: "the keeper waves",
      frame_images: [{ type: "image_url", image_url: { url }, frame_type: "first_frame" }],
      duration: 10,
      aspect_ratio: "16:9",
      generate_audio: false
    })
    const probed = await download(task.result!.videos[0].url)
    expect(probed.durationS).toBeGreaterThan(9.8)
    expect(probed.audio).toBeUndefined()
  })

  it("what a route cannot take: a 400 at creation, nothing charged or sent; an option it has no field for, refunded unsent", async () => {
    const acct = await createAccount(r.gw, { name: "refusals", wallet_credits: 100 })
    const before = r.fake.requests.length
    const create = (json: unknown) => raw(r.gw, "POST", "/v1/video/tasks", { key: acct.model.key, json })
    // Veo 3.1 Lite takes no last frame (the adapter's table): the only route of the model refuses it.
    const lastFrame = await create(
      video(FAMV_LITE, {
        prompt: "with an end",
        reference_mode: "frame",
        image: { url: `${media.url}/first.png` },
        reference_images: [{ url: `${media.url}/last.png` }]
      })
    )
    expect(lastFrame.status).toBe(400)
    expect(errorOf(lastFrame.body)).toMatchObject({ code: "invalid_video_parameter" })
    expect(String(errorOf(lastFrame.body)?.message)).toMatch(/last frame/)
    expectNothingUpstream(r, lastFrame.body)
    expect((await operator(r.gw).account(acct.id)).wallet_credits).toBe(100)
    expect(r.fake.requests.slice(before)).toEqual([])
    // famK's cfg_scale has no field of OpenRouter's own: refused before sending, refunded.
    const { task } = await runOpenRouter(
      r,
      video(FAMK, { prompt: "guided" }, { duration: 5 }, { provider_options: { famK: { cfg_scale: 0.5 } } })
    )
    expect(task).toMatchObject({ status: "failed", error: { code: "video_task_failed", retryable: false } })
    expect(task.error?.message).toMatch(/famK\.cfg_scale/)
    await expectRefunded(r.gw, task.id)
    expect(r.fake.requests.slice(before)).toEqual([])
  })

  it("cancel: OpenRouter has none, so 409 task_not_cancellable, nothing sent but reads, and the task succeeds", async () => {
    r.fake.lives.push({
      prompt: "no cancel here",
      statuses: ["pending", "in_progress", "in_progress", "in_progress", "completed"]
    })
    const acct = await createAccount(r.gw, { name: "canceller", wallet_credits: 100 })
    const created = await api(r.gw, acct).createVideoReply(
      video(FAMV_FAST, { prompt: "no cancel here" }) as never
    )
    expect(created.status).toBe(202)
    const id = created.task.id
    await eventually(async () => {
      const [row] = await query<{ run_state: string; polls: number }>(
        r.gw,
        (sql) => sql`SELECT run_state, polls FROM tasks WHERE id = ${id}`
      )
      return row !== undefined && ["waiting", "polling"].includes(row.run_state) && row.polls > 0 || undefined
    }, "the task waits upstream, polled once")
    const before = r.fake.requests.length
    const reply = await refused(
      taskApi(r.gw, { resource: acct.resource.key }).cancelVideo(id),
      409,
      "task_not_cancellable",
      "conflict_error"
    )
    expectNothingUpstream(r, reply)
    const task = (await api(r.gw, acct).waitTask("video", id)).at(-1)!
    expect(task.status).toBe("succeeded")
    expect(r.fake.requests.slice(before).filter((q) => q.method !== "GET")).toEqual([])
    await expectChargedOnce(r.gw, id)
  })

  it("a 429 waits as Retry-After asks, a 502 and a 503 page are tried again: one job each, charged once", async () => {
    r.fake.faults.create.push({ kind: "rate_limited", retryAfter: "1" })
    const throttled = await runOpenRouter(r, video(FAMV_FAST, { prompt: "throttled once" }))
    expect(throttled.task.status).toBe("succeeded")
    expect(throttled.creates).toHaveLength(2)
    expect(throttled.creates[1]!.at - throttled.creates[0]!.at).toBeGreaterThanOrEqual(950)
    expect([...r.fake.jobs.values()].filter((j) => j.body.prompt === "throttled once")).toHaveLength(1)
    await expectChargedOnce(r.gw, throttled.task.id)
    expectNothingUpstream(r, throttled.task)

    r.fake.faults.create.push({ kind: "error", status: 502, message: "Provider error" }, { kind: "html", status: 503 })
    const broken = await runOpenRouter(r, video(FAMK, { prompt: "servers broke twice" }, { duration: 5 }))
    expect(broken.task.status).toBe("succeeded")
    expect(broken.creates).toHaveLength(3)
    expect([...r.fake.jobs.values()].filter((j) => j.body.prompt === "servers broke twice")).toHaveLength(1)
    await expectChargedOnce(r.gw, broken.task.id)
    expectNothingUpstream(r, broken.task)
  })

  it("the channel check: GET /key is ok with the key, credentials_refused with another, unreachable on a closed port, unexpected_answer from an HTML page", async () => {
    const check = (name: string) => adminApi(r.gw)((c) => c.adminChannels.checkChannel({ path: { name } }))
    const creates = r.fake.requests.filter((q) => q.method === "POST").length
    expect(await check("aggregator")).toMatchObject({ ok: true, result: "ok", detail: "GET /key: HTTP 200" })
    const wrong = await check("aggregator-wrong")
    expect(wrong).toMatchObject({ ok: false, result: "credentials_refused" })
    expect(wrong.detail).not.toMatch(/sk-or-v1/)
    expect(await check("aggregator-down")).toMatchObject({ ok: false, result: "unreachable" })
    expect(await check("aggregator-garbage")).toMatchObject({ ok: false, result: "unexpected_answer" })
    expect(r.fake.requests.filter((q) => q.method === "POST").length).toBe(creates)
  })

  it("a route to a model the adapter does not know stops the boot, naming the ones it knows", async () => {
    const boot = (upstream: string, model = FAMK) => {
      const dir = configWith("models.json", (m) => {
        m.channels.aggregator = { adapter: "openrouter", credentials: { api_key: { env: "K" } } }
        m.models[model].channels = route(upstream)
      })
      const provider = ConfigProvider.fromMap(new Map(Object.entries({ CONFIG_DIR: dir, K: "k" })))
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
    expect(Exit.isSuccess(await boot("kwaivgi/kling-v3.0-std"))).toBe(true)
    for (
      const [upstream, why, model] of [
        ["kwaivgi/kling-v2.1", /does not know this model for famK; it knows kwaivgi\/kling-v3.0-std/, FAMK],
        // A famV model on a famK route is not famK's.
        ["google/veo-3.1", /it knows kwaivgi\/kling-v3.0-std, kwaivgi\/kling-v3.0-pro/, FAMK],
        // Kling 3.0 Pro makes 1080p videos only: a 720p model cannot be routed there.
        ["kwaivgi/kling-v3.0-pro", /makes no 720p videos/, FAMK]
      ] as const
    ) {
      const exit = await boot(upstream, model)
      expect(Exit.isFailure(exit) && String((exit.cause as any).error?.message)).toMatch(why)
    }
  })
})
