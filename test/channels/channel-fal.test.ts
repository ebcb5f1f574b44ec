import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { operator } from "../support/adminApi.ts"
import { backend } from "../support/database.ts"
import {
  engineRow,
  expectChargedOnce,
  expectNothingUpstream,
  FAL_KEY,
  type FalSetup,
  runFal,
  runFalImage,
  startFalGateway
} from "../support/fal.ts"
import { probeBytes } from "../support/media.ts"
import { makeImage, startMediaServer } from "../support/uploads.ts"

/**
 * The `fal` adapter against a fake fal queue over HTTP (docs/adapters/fal.md):
 * per family, a text-only and a first-frame task sent to the right endpoint
 * with exactly the input its schema wants, followed through the status and
 * result URLs fal returned (without the endpoint's subpath), re-hosted and
 * playable; an image model's generation and edit. Faults, cancel, webhooks
 * and the boot check: channel-fal-faults.test.ts, channel-fal-protocol.test.ts.
 */

const FAMS = "provx-famS-720p"
const FAMK = "provx-famK-3.0-1080p"
const FAMK_OMNI = "provx-famK-3.0-omni-720p"
const FAMV = "provx-famV-3.1-standard-720p"
const FAMV_FAST = "provx-famV-3.1-fast-1080p"
const IMAGE = "provx-image-1"

let setup: FalSetup
let media: Awaited<ReturnType<typeof startMediaServer>>

beforeAll(async () => {
  const [png, png2] = await Promise.all([makeImage("png", "160x90"), makeImage("png", "160x90")])
  media = await startMediaServer({
    "/first.png": { body: png, type: "image/png" },
    "/last.png": { body: png2, type: "image/png" }
  })
  setup = await startFalGateway({
    [FAMS]: [{ channel: "fal-market", upstream_model: "fal-ai/bytedance/seedance/v1.5/pro/text-to-video" }],
    [FAMK]: [{ channel: "fal-market", upstream_model: "fal-ai/kling-video/v3/pro/text-to-video" }],
    [FAMK_OMNI]: [{ channel: "fal-market", upstream_model: "fal-ai/kling-video/o3/pro/text-to-video" }],
    [FAMV]: [{ channel: "fal-market", upstream_model: "fal-ai/veo3.1" }],
    // A route may name the image sibling: a text-only request still goes to the line's text endpoint.
    [FAMV_FAST]: [{ channel: "fal-market", upstream_model: "fal-ai/veo3.1/fast/image-to-video" }],
    [IMAGE]: [{ channel: "fal-market", upstream_model: "fal-ai/nano-banana" }]
  })
}, 90_000)
afterAll(async () => {
  await setup?.close()
  await media?.close()
})

/** The task's one submit, then its status and result queries under the app's path (never the subpath). */
const expectFollowed = (
  run: Pick<Awaited<ReturnType<typeof runFal>>, "creates" | "requests">,
  endpoint: string,
  app: string
) => {
  expect(run.creates).toHaveLength(1)
  expect(run.creates[0]!.path).toBe(`/${endpoint}`)
  expect(run.creates[0]!.headers.authorization).toBe(`Key ${FAL_KEY}`)
  const rest = run.requests.filter((r) => r.method !== "POST")
  expect(rest.length).toBeGreaterThanOrEqual(2)
  for (const r of rest) expect(r.path).toMatch(new RegExp(`^/${app}/requests/[0-9a-f-]{36}(/status)?$`))
  // The result is fetched once the status said COMPLETED: right after a status, in the same poll. A poll that ran
  // past `poll_s` (a loaded machine) is asked again, status and result, so there may be more than one.
  expect(rest.at(-1)!.path).not.toMatch(/\/status$/)
  const results = rest.flatMap((r, i) => r.path.endsWith("/status") ? [] : [i])
  expect(results.length).toBeGreaterThanOrEqual(1)
  for (const i of results) expect(rest[i - 1]?.path).toMatch(/\/status$/)
}

const download = async (task: any) => {
  const video = task.result.videos[0]
  expect(new URL(video.url).origin).toBe(setup.gw.url)
  return probeBytes(new Uint8Array(await (await fetch(video.url)).arrayBuffer()))
}

describe(`the fal channel (${backend})`, () => {
  it("famS text only: Seedance 1.5 Pro text-to-video with its string duration, resolution, seed and camera_fixed", async () => {
    const run = await runFal(setup, {
      model: FAMS,
      operation: "generation",
      input: { prompt: "a paper boat on a stream" },
      output: { duration: 6, aspect_ratio: "4:3" },
      provider_options: { famS: { seed: 7, camera_fixed: true } }
    })
    expect(run.task.status).toBe("succeeded")
    expect(run.seen.some((t: any) => t.status === "in_progress")).toBe(true)
    expectFollowed(run, "fal-ai/bytedance/seedance/v1.5/pro/text-to-video", "fal-ai/bytedance")
    expect(run.creates[0]!.body).toEqual({
      prompt: "a paper boat on a stream",
      duration: "6",
      aspect_ratio: "4:3",
      resolution: "720p",
      generate_audio: true,
      seed: 7,
      camera_fixed: true
    })
    const probed = await download(run.task)
    expect(probed.video).toMatchObject({ codec: "h264", width: 128, height: 96 })
    expect(probed.durationS).toBeGreaterThan(5.8)
    expect(probed.durationS).toBeLessThan(6.3)
    expectNothingUpstream(setup.fake, run.task)
    await expectChargedOnce(setup.gw, run.task.id)
  })

  it("famS first frame: the image-to-video sibling with image_url", async () => {
    const run = await runFal(setup, {
      model: FAMS,
      operation: "generation",
      input: { prompt: "the boat sails away", image: { url: `${media.url}/first.png` } },
      output: { duration: 4, generate_audio: false }
    })
    expect(run.task.status).toBe("succeeded")
    expectFollowed(run, "fal-ai/bytedance/seedance/v1.5/pro/image-to-video", "fal-ai/bytedance")
    expect(run.creates[0]!.body).toEqual({
      prompt: "the boat sails away",
      image_url: `${media.url}/first.png`,
      duration: "4",
      aspect_ratio: "16:9",
      resolution: "720p",
      generate_audio: false
    })
    expect((await download(run.task)).audio).toBeUndefined()
  })

  it("famK text only: Kling 3.0 Pro text-to-video with negative_prompt and cfg_scale", async () => {
    const run = await runFal(setup, {
      model: FAMK,
      operation: "generation",
      input: { prompt: "a fox in the snow" },
      output: { duration: 5, aspect_ratio: "9:16" },
      provider_options: { famK: { negative_prompt: "blur", cfg_scale: 0.7 } }
    })
    expect(run.task.status).toBe("succeeded")
    expectFollowed(run, "fal-ai/kling-video/v3/pro/text-to-video", "fal-ai/kling-video")
    expect(run.creates[0]!.body).toEqual({
      prompt: "a fox in the snow",
      duration: "5",
      aspect_ratio: "9:16",
      generate_audio: true,
      negative_prompt: "blur",
      cfg_scale: 0.7
    })
    expect((await download(run.task)).video).toMatchObject({ width: 90, height: 160 })
  })

  it("famK first and last frame: image-to-video with start_image_url and end_image_url, no aspect ratio", async () => {
    const run = await runFal(setup, {
      model: FAMK,
      operation: "generation",
      input: {
        prompt: "day turns to night",
        image: { url: `${media.url}/first.png` },
        reference_images: [{ url: `${media.url}/last.png` }]
      },
      output: { duration: 3 }
    })
    expect(run.task.status).toBe("succeeded")
    expectFollowed(run, "fal-ai/kling-video/v3/pro/image-to-video", "fal-ai/kling-video")
    expect(run.creates[0]!.body).toEqual({
      prompt: "day turns to night",
      start_image_url: `${media.url}/first.png`,
      end_image_url: `${media.url}/last.png`,
      duration: "3",
      generate_audio: true
    })
    expect((await download(run.task)).durationS).toBeGreaterThan(2.8)
  })

  it("famV text only: Veo 3.1 with duration \"8s\", resolution, seed and negative_prompt", async () => {
    const run = await runFal(setup, {
      model: FAMV,
      operation: "generation",
      input: { prompt: "waves on a beach" },
      output: { duration: 8 },
      provider_options: { famV: { seed: 12, negative_prompt: "people" } }
    })
    expect(run.task.status).toBe("succeeded")
    expectFollowed(run, "fal-ai/veo3.1", "fal-ai/veo3.1")
    expect(run.creates[0]!.body).toEqual({
      prompt: "waves on a beach",
      duration: "8s",
      aspect_ratio: "16:9",
      resolution: "720p",
      generate_audio: true,
      seed: 12,
      negative_prompt: "people"
    })
    const probed = await download(run.task)
    expect(probed.durationS).toBeGreaterThan(7.8)
    expect(probed.audio?.codec).toBe("aac")
  })

  it("famV first frame: the image-to-video sibling; first and last: the first-last-frame one", async () => {
    const one = await runFal(setup, {
      model: FAMV,
      operation: "generation",
      input: { prompt: "the tide comes in", image: { url: `${media.url}/first.png` } },
      output: { duration: 4 }
    })
    expect(one.task.status).toBe("succeeded")
    expectFollowed(one, "fal-ai/veo3.1/image-to-video", "fal-ai/veo3.1")
    expect(one.creates[0]!.body).toEqual({
      prompt: "the tide comes in",
      image_url: `${media.url}/first.png`,
      duration: "4s",
      aspect_ratio: "16:9",
      resolution: "720p",
      generate_audio: true
    })
    const two = await runFal(setup, {
      model: FAMV,
      operation: "generation",
      input: {
        prompt: "sunrise to sunset",
        image: { url: `${media.url}/first.png` },
        reference_images: [{ url: `${media.url}/last.png` }]
      },
      output: { duration: 6, aspect_ratio: "9:16" }
    })
    expect(two.task.status).toBe("succeeded")
    expectFollowed(two, "fal-ai/veo3.1/first-last-frame-to-video", "fal-ai/veo3.1")
    expect(two.creates[0]!.body).toMatchObject({
      first_frame_url: `${media.url}/first.png`,
      last_frame_url: `${media.url}/last.png`,
      duration: "6s",
      aspect_ratio: "9:16"
    })
  })

  it("famK omni, images mode: Kling O3 reference-to-video, image_urls in order, each @name as its @Image tag", async () => {
    const run = await runFal(setup, {
      model: FAMK_OMNI,
      operation: "generation",
      input: {
        prompt: "@hero meets @hero2 in the rain",
        reference_mode: "images",
        reference_images: [
          { url: `${media.url}/first.png`, name: "hero" },
          { url: `${media.url}/last.png`, name: "hero2" },
          { url: `${media.url}/first.png` }
        ]
      },
      output: { duration: 4, aspect_ratio: "9:16" }
    })
    expect(run.task.status).toBe("succeeded")
    expectFollowed(run, "fal-ai/kling-video/o3/pro/reference-to-video", "fal-ai/kling-video")
    expect(run.creates[0]!.body).toEqual({
      prompt: "@Image1 meets @Image2 in the rain",
      image_urls: [`${media.url}/first.png`, `${media.url}/last.png`, `${media.url}/first.png`],
      duration: "4",
      aspect_ratio: "9:16",
      generate_audio: true
    })
    expect((await download(run.task)).video).toMatchObject({ width: 90, height: 160 })
  })

  it("famV images mode: Veo 3.1 reference-to-video with image_urls, 8 s only", async () => {
    const run = await runFal(setup, {
      model: FAMV,
      operation: "generation",
      input: {
        prompt: "the same cat in three places",
        reference_mode: "images",
        reference_images: [{ url: `${media.url}/first.png` }, { url: `${media.url}/last.png` }]
      },
      output: { duration: 8, aspect_ratio: "16:9" }
    })
    expect(run.task.status).toBe("succeeded")
    expectFollowed(run, "fal-ai/veo3.1/reference-to-video", "fal-ai/veo3.1")
    expect(run.creates[0]!.body).toEqual({
      prompt: "the same cat in three places",
      image_urls: [`${media.url}/first.png`, `${media.url}/last.png`],
      duration: "8s",
      aspect_ratio: "16:9",
      resolution: "720p",
      generate_audio: true
    })
  })

  it("a route naming an image sibling still sends a text-only request to the line's text endpoint", async () => {
    const run = await runFal(setup, {
      model: FAMV_FAST,
      operation: "generation",
      input: { prompt: "rain on a window" },
      output: { duration: 4 }
    })
    expect(run.task.status).toBe("succeeded")
    expectFollowed(run, "fal-ai/veo3.1/fast", "fal-ai/veo3.1")
    expect(run.creates[0]!.body).toMatchObject({ resolution: "1080p", duration: "4s" })
  })

  it("image generation: Nano Banana with num_images, output_format and the size's ratio; images re-hosted", async () => {
    const run = await runFalImage(setup, {
      model: IMAGE,
      operation: "generation",
      input: { prompt: "a lighthouse at dusk" },
      output: { size: "1536x1024", format: "jpeg", count: 2 }
    })
    expect(run.task.error ?? null).toBe(null)
    expect(run.task.status).toBe("succeeded")
    expectFollowed(run, "fal-ai/nano-banana", "fal-ai/nano-banana")
    expect(run.creates[0]!.body).toEqual({
      prompt: "a lighthouse at dusk",
      num_images: 2,
      output_format: "jpeg",
      aspect_ratio: "3:2"
    })
    expect(run.task.result?.images).toHaveLength(2)
    for (const image of run.task.result?.images ?? []) {
      expect(new URL(image.url).origin).toBe(setup.gw.url)
      expect(image).toMatchObject({ format: "jpeg", width: 1536, height: 1024 })
    }
    expectNothingUpstream(setup.fake, run.task)
  })

  it("image edit: the edit endpoint with the input images as data URIs", async () => {
    const run = await runFalImage(setup, {
      model: IMAGE,
      operation: "edit",
      input: { prompt: "add a hat", images: [{ url: `${media.url}/first.png` }] },
      output: { size: "1024x1024", format: "png" }
    })
    expect(run.task.error ?? null).toBe(null)
    expect(run.task.status).toBe("succeeded")
    expectFollowed(run, "fal-ai/nano-banana/edit", "fal-ai/nano-banana")
    const body = run.creates[0]!.body
    expect(body).toMatchObject({ prompt: "add a hat", num_images: 1, output_format: "png", aspect_ratio: "1:1" })
    expect(body.image_urls).toHaveLength(1)
    expect(body.image_urls[0]).toMatch(/^data:image\/png;base64,iVBORw0KGgo/)
  })

  it("operators see fal's request path and answer; the caller never does", async () => {
    const run = await runFal(setup, {
      model: FAMK,
      operation: "generation",
      input: { prompt: "a heron" },
      output: { duration: 5 }
    })
    const row = await engineRow(setup.gw, run.task.id)
    expect(row.upstream_id).toMatch(/^fal-ai\/kling-video\/requests\/[0-9a-f-]{36}$/)
    const view = await operator(setup.gw).task(run.task.id)
    expect(view.attempts[0]).toMatchObject({ channel: "fal-market", outcome: "succeeded" })
    expectNothingUpstream(setup.fake, run.seen)
  })
})
