import { NodeContext } from "@effect/platform-node"
import { ConfigProvider, Effect, Exit, Layer } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Registry } from "../../src/catalog/Registry.ts"
import { CatalogLive } from "../../src/Gateway.ts"
import { AppConfig } from "../../src/platform/AppConfig.ts"
import { MediaToolsLive } from "../../src/runtime/node/MediaTools.ts"
import { UpstreamHttpClientLive } from "../../src/runtime/node/UpstreamHttpClient.ts"
import { versionOf } from "../fakes/replicateModels.ts"
import { createAccount, operator } from "../support/adminApi.ts"
import { api } from "../support/api.ts"
import { configWith } from "../support/config.ts"
import { backend } from "../support/database.ts"
import { errorOf, raw } from "../support/http.ts"
import { makePng } from "../support/images.ts"
import { probeBytes } from "../support/media.ts"
import {
  engineRow,
  expectNothingUpstream,
  expectRefunded,
  REPLICATE_TOKEN,
  type ReplicateSetup,
  runReplicate,
  startReplicateGateway
} from "../support/replicate.ts"
import { makeImage, startMediaServer } from "../support/uploads.ts"
import { createAndWait } from "../support/upstream.ts"

/**
 * The `replicate` adapter against a fake Replicate speaking its protocol over
 * HTTP (docs/adapters/replicate.md): per family a text-only and a first-frame
 * task, each one prediction whose input is checked literally against the
 * model's schema (the fake refuses anything else with Replicate's 422), its
 * output re-hosted by the gateway and playable; the image model's generation
 * and edit; what a model cannot take refused before anything is sent; a route
 * to an unknown model stopping the boot. Faults, states, cancel and
 * webhooks: channel-replicate-faults.test.ts.
 */

const FAMS_TEXT = "provy-famS-2.0-480p"
const FAMS_FRAME = "provx-famS-720p"
const FAMK = "provx-famK-3.0-720p"
const FAMV_FAST = "provx-famV-3.1-fast-720p"
const FAMV = "provx-famV-3.1-standard-1080p"
const IMAGE = "provx-image-1"
const VEO_VERSION = versionOf("google/veo-3.1")
const DEADLINE = "6h" // the channel's default timeouts.deadline_s, 21600

let r: ReplicateSetup
let media: Awaited<ReturnType<typeof startMediaServer>>

const route = (upstream_model: string, narrower?: unknown) => [
  { channel: "marketplace", upstream_model, ...(narrower ? { narrower } : {}) }
]

beforeAll(async () => {
  const [png, png2] = await Promise.all([makeImage("png"), makeImage("png", "80x60")])
  media = await startMediaServer({
    "/first.png": { body: png, type: "image/png" },
    "/last.png": { body: png2, type: "image/png" }
  })
  r = await startReplicateGateway({
    // Seedance 1 Pro takes 2 to 12 s: the route says so, and a longer request is refused at creation.
    [FAMS_TEXT]: route("bytedance/seedance-1-pro", { durations: { min: 4, max: 12 } }),
    [FAMS_FRAME]: route("bytedance/seedance-1-pro", { durations: { min: 4, max: 12 } }),
    [FAMK]: route("kwaivgi/kling-v3-video"),
    [FAMV_FAST]: route("google/veo-3.1-fast"),
    [FAMV]: route(`google/veo-3.1:${VEO_VERSION}`),
    [IMAGE]: route("google/nano-banana")
  })
}, 60_000)
afterAll(async () => {
  await r?.close()
  await media?.close()
})

const download = async (url: string) => {
  // Re-hosted: served by the gateway itself, never Replicate's one-hour link.
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

describe(`the replicate channel: requests and results (${backend})`, () => {
  it("famS text only: the model-scoped create, Cancel-After from the deadline, the input the schema wants", async () => {
    const { creates, seen, task } = await runReplicate(
      r,
      video(FAMS_TEXT, { prompt: "a red fox in snow" }, { duration: 5, generate_audio: false })
    )
    expect(task.status).toBe("succeeded")
    expect(seen.some((t) => t.status === "in_progress")).toBe(true)
    expect(creates).toHaveLength(1)
    expect(creates[0]!.path).toBe("/v1/models/bytedance/seedance-1-pro/predictions")
    expect(creates[0]!.headers.authorization).toBe(`Bearer ${REPLICATE_TOKEN}`)
    expect(creates[0]!.headers["cancel-after"]).toBe(DEADLINE)
    expect(creates[0]!.body).toEqual({
      input: { prompt: "a red fox in snow", duration: 5, aspect_ratio: "16:9", resolution: "480p", fps: 24 }
    })
    const probed = await download(task.result!.videos[0].url)
    expect(probed.video).toMatchObject({ codec: "h264", width: 160, height: 90 })
    expect(probed.audio).toBeUndefined()
    expect(probed.durationS).toBeGreaterThan(4.8)
    expectNothingUpstream(r.fake, task)
    // Operators do see the prediction.
    const view = await operator(r.gw).task(task.id)
    expect(view.attempts[0]).toMatchObject({ channel: "marketplace", outcome: "succeeded" })
    expect(view.attempts[0]?.last_answer).toMatchObject({ status: "succeeded" })
    expect(r.fake.predictions.has((await engineRow(r.gw, task.id)).upstream_id!)).toBe(true)
  })

  it("famS first frame with its options: `image`, seed and camera_fixed; no aspect ratio (the frame gives it)", async () => {
    const url = `${media.url}/first.png`
    const { creates, task } = await runReplicate(
      r,
      video(FAMS_FRAME, { prompt: "the keeper waves", reference_mode: "frame", image: { url } }, {
        duration: 6,
        generate_audio: false
      }, { provider_options: { famS: { seed: 42, camera_fixed: true } } })
    )
    expect(task.status).toBe("succeeded")
    expect(creates).toHaveLength(1)
    expect(creates[0]!.body.input).toEqual({
      prompt: "the keeper waves",
      image: url,
      duration: 6,
      resolution: "720p",
      seed: 42,
      camera_fixed: true,
      fps: 24
    })
    expect((await download(task.result!.videos[0].url)).durationS).toBeGreaterThan(5.8)
  })

  it("famK text only: integer duration, `mode` from the resolution, the audio switch, progress from the logs", async () => {
    r.fake.scenarios.push({ processing: 4 })
    const { creates, seen, task } = await runReplicate(
      r,
      video(FAMK, { prompt: "a paper boat" }, { duration: 5, aspect_ratio: "9:16" })
    )
    expect(task.status).toBe("succeeded")
    expect(creates).toHaveLength(1)
    expect(creates[0]!.path).toBe("/v1/models/kwaivgi/kling-v3-video/predictions")
    expect(creates[0]!.body.input).toEqual({
      prompt: "a paper boat",
      duration: 5,
      aspect_ratio: "9:16",
      mode: "standard",
      generate_audio: true
    })
    // The model's progress bar, read from the prediction's logs while it processed.
    expect(seen.some((t) => t.status === "in_progress" && t.progress > 0 && t.progress < 100)).toBe(true)
    const probed = await download(task.result!.videos[0].url)
    expect(probed.video).toMatchObject({ width: 90, height: 160 })
    expect(probed.audio?.codec).toBe("aac")
  })

  it("famK first and last frame: `start_image` and `end_image`", async () => {
    const { creates, task } = await runReplicate(
      r,
      video(FAMK, {
        prompt: "day turns to night",
        image: { url: `${media.url}/first.png` },
        reference_images: [{ url: `${media.url}/last.png` }]
      }, { duration: 3, generate_audio: false })
    )
    expect(task.status).toBe("succeeded")
    expect(creates[0]!.body.input).toEqual({
      prompt: "day turns to night",
      start_image: `${media.url}/first.png`,
      end_image: `${media.url}/last.png`,
      duration: 3,
      mode: "standard",
      generate_audio: false
    })
    expect((await download(task.result!.videos[0].url)).audio).toBeUndefined()
  })

  it("famV text only on veo-3.1-fast: resolution, aspect ratio, audio", async () => {
    const { creates, task } = await runReplicate(r, video(FAMV_FAST, { prompt: "a lighthouse" }, { duration: 8 }))
    expect(task.status).toBe("succeeded")
    expect(creates).toHaveLength(1)
    expect(creates[0]!.path).toBe("/v1/models/google/veo-3.1-fast/predictions")
    expect(creates[0]!.body.input).toEqual({
      prompt: "a lighthouse",
      duration: 8,
      aspect_ratio: "16:9",
      resolution: "720p",
      generate_audio: true
    })
    const probed = await download(task.result!.videos[0].url)
    expect(probed.durationS).toBeGreaterThan(7.8)
    expect(probed.audio?.codec).toBe("aac")
  })

  it("famV first frame on a pinned version: POST /predictions with `version`, the famV options", async () => {
    const { creates, task } = await runReplicate(
      r,
      video(FAMV, { prompt: "waves", image: { url: `${media.url}/first.png` } }, { duration: 6 }, {
        provider_options: { famV: { seed: 7, negative_prompt: "people" } }
      })
    )
    expect(task.status).toBe("succeeded")
    expect(creates).toHaveLength(1)
    expect(creates[0]!.path).toBe("/v1/predictions")
    expect(creates[0]!.body).toEqual({
      version: VEO_VERSION,
      input: {
        prompt: "waves",
        image: `${media.url}/first.png`,
        duration: 6,
        aspect_ratio: "16:9",
        resolution: "1080p",
        generate_audio: true,
        seed: 7,
        negative_prompt: "people"
      }
    })
    expect((await download(task.result!.videos[0].url)).video?.codec).toBe("h264")
  })

  it("famV reference images: the `images` mode as `reference_images`", async () => {
    const refs = [`${media.url}/first.png`, `${media.url}/last.png`]
    const { creates, task } = await runReplicate(
      r,
      video(FAMV, {
        prompt: "@a meets @b",
        reference_mode: "images",
        reference_images: refs.map((url) => ({ url }))
      }, { duration: 8 })
    )
    expect(task.status).toBe("succeeded")
    expect(creates[0]!.body.input).toMatchObject({ reference_images: refs, aspect_ratio: "16:9", duration: 8 })
  })

  it("what a model cannot take: refused at creation by what the route takes, or before sending, never sent", async () => {
    const acct = await createAccount(r.gw, { name: "refusals", wallet_credits: 100 })
    const before = r.fake.requests.length
    // Raw: requests the route refuses at creation, built by the untyped `video` helper (only the error is checked).
    const create = (json: unknown) => raw(r.gw, "POST", "/v1/video/tasks", { key: acct.model.key, json })
    // Past the route's durations: a 400 at creation, nothing charged.
    const long = await create(video(FAMS_TEXT, { prompt: "too long" }, { duration: 15, generate_audio: false }))
    expect(long.status).toBe(400)
    // Seedance 1 Pro makes silent videos (the adapter's table says so): the default soundtrack is a 400 too.
    const loud = await create(video(FAMS_TEXT, { prompt: "with sound" }))
    expect(loud.status).toBe(400)
    expect(errorOf(loud.body)).toMatchObject({ code: "invalid_video_parameter" })
    expect(String(errorOf(loud.body)?.message)).toMatch(/"output\.generate_audio" must be false/)
    expect((await operator(r.gw).account(acct.id)).wallet_credits).toBe(100)
    // famK's options have no field on kling-v3-video: refused before sending.
    for (
      const [body, words] of [
        [video(FAMK, { prompt: "x" }, {}, { provider_options: { famK: { cfg_scale: 0.5 } } }), /famK\.cfg_scale/]
      ] as const
    ) {
      const { task } = await runReplicate(r, body)
      expect(task).toMatchObject({ status: "failed", error: { code: "video_task_failed", retryable: false } })
      expect(task.error?.message).toMatch(words)
      await expectRefunded(r.gw, task.id)
    }
    expect(r.fake.requests.slice(before)).toEqual([])
  })

  it("image generation: the size as an aspect ratio, the format as the model spells it, re-hosted", async () => {
    const before = r.fake.requests.length
    const { task } = await createAndWait(r.gw, {
      model: IMAGE,
      operation: "generation",
      input: { prompt: "a lighthouse at dusk" },
      output: { size: "1536x1024", format: "png" }
    }, { kind: "image", intervalMs: 50 })
    expect(task.status).toBe("succeeded")
    const creates = r.fake.requests.slice(before).filter((q) => q.method === "POST")
    expect(creates).toHaveLength(1)
    expect(creates[0]!.path).toBe("/v1/models/google/nano-banana/predictions")
    expect(creates[0]!.body.input).toEqual({
      prompt: "a lighthouse at dusk",
      aspect_ratio: "3:2",
      output_format: "png"
    })
    expect(task.result!.images[0]).toMatchObject({ mime_type: "image/png", format: "png", width: 96, height: 64 })
    expect(new URL(task.result!.images[0].url).origin).toBe(r.gw.url)
    expectNothingUpstream(r.fake, task)
  })

  it("image edit: the source image inline as a data URI in `image_input`", async () => {
    const photo = await makePng(64, 64)
    const acct = await createAccount(r.gw, { name: "edits", wallet_credits: 10 })
    const form = new FormData()
    for (const [k, v] of Object.entries({ model: IMAGE, operation: "edit", prompt: "add a hat", size: "512x512" })) {
      form.append(k, v)
    }
    form.append("image", new Blob([photo.slice()]), "photo.png")
    const before = r.fake.requests.length
    const created = await api(r.gw, acct).createImageReply(form)
    expect(created.status).toBe(202)
    const task = (await api(r.gw, acct).waitTask("image", created.task.id)).at(-1)!
    expect(task.status).toBe("succeeded")
    const [sent] = r.fake.requests.slice(before).filter((q) => q.method === "POST")
    expect(sent!.body.input).toEqual({
      prompt: "add a hat",
      image_input: [`data:image/png;base64,${Buffer.from(photo).toString("base64")}`],
      aspect_ratio: "1:1",
      output_format: "png"
    })
  })

  it("a route to a model the adapter does not know stops the boot, naming the ones it knows", async () => {
    const boot = (upstream: string, model = FAMK) => {
      const dir = configWith("models.json", (m) => {
        m.channels.marketplace = { adapter: "replicate", credentials: { api_token: { env: "T" } } }
        m.models[model].channels = route(upstream)
      })
      const provider = ConfigProvider.fromMap(new Map(Object.entries({ CONFIG_DIR: dir, T: "t" })))
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
    expect(Exit.isSuccess(await boot("kwaivgi/kling-v3-video"))).toBe(true)
    expect(Exit.isSuccess(await boot(`google/nano-banana:${versionOf("google/nano-banana")}`, IMAGE))).toBe(true)
    for (
      const [upstream, why, model] of [
        [
          "kwaivgi/kling-v2.1",
          /knows no such Replicate model for famK; it knows kwaivgi\/kling-v3-video, and a channel's "models" setting adds one/,
          FAMK
        ],
        // A famV model on a famK route is not famK's, nor a video model an image model's.
        ["google/veo-3.1", /it knows kwaivgi\/kling-v3-video/, FAMK],
        ["google/veo-3.1", /for image; it knows google\/nano-banana/, IMAGE],
        ["not a model", /not a Replicate model/, FAMK],
        ["google/veo-3.1:v2", /not a Replicate model/, FAMV]
      ] as const
    ) {
      const exit = await boot(upstream, model)
      expect(Exit.isFailure(exit) && String((exit.cause as any).error?.message)).toMatch(why)
    }
  })
})
