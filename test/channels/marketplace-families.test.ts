import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { expectNothingUpstream as nothingOfFal, type FalSetup, runFal, startFalGateway } from "../support/fal.ts"
import { api, backend, createAccount, download, expectChargedOnce, refused } from "../support/kit.ts"
import {
  expectNothingUpstream as nothingOfReplicate,
  type ReplicateSetup,
  runReplicate,
  startReplicateGateway
} from "../support/replicate.ts"
import { makeImage, startMediaServer } from "../support/uploads.ts"

/**
 * The two newer families reach the marketplaces by configuration alone: a
 * fal channel's `endpoints` describe Wan 2.5 (famW) and Hailuo 02 Standard
 * (famH) as data, a Replicate channel's `models` describe
 * `minimax/hailuo-02` (famH) and `wan-video/wan-2.5-i2v` (famW, a first
 * frame required, so a text-only famW task takes the model's next route,
 * the sandbox), and neither adapter names either family. Each
 * task is one upstream request with exactly the input the endpoint's schema
 * takes (the fakes refuse anything else, as fal and Replicate do), and what
 * the upstream cannot do is refused at creation, never sent.
 */

const FAMW = "provy-famW-2.5-720p"
const FAMH = "provx-famH-02-768p"

const FAL_ENDPOINTS = {
  "fal-ai/wan-25-preview/text-to-video": {
    family: "famW",
    image: "fal-ai/wan-25-preview/image-to-video",
    durations: [5, 10],
    aspect_ratios: ["16:9", "9:16", "1:1", "4:3", "3:4"],
    resolutions: { "720p": "720p", "1080p": "1080p" },
    audio: "always",
    seed: true,
    negative_prompt: true,
    options: { prompt_extend: "enable_prompt_expansion" }
  },
  "fal-ai/minimax/hailuo-02/standard/text-to-video": {
    family: "famH",
    image: "fal-ai/minimax/hailuo-02/standard/image-to-video",
    last_frame: "end_image_url",
    durations: [6, 10],
    audio: "never",
    options: { prompt_optimizer: "prompt_optimizer" }
  }
}

const REPLICATE_MODELS = {
  "wan-video/wan-2.5-i2v": {
    family: "famW",
    durations: [5, 10],
    aspect_ratio_field: null,
    resolution: { field: "resolution", values: { "480p": "480p", "720p": "720p", "1080p": "1080p" } },
    always_sound: true,
    first_frame_required: true,
    options: { seed: "seed", negative_prompt: "negative_prompt", prompt_extend: "enable_prompt_expansion" }
  },
  "minimax/hailuo-02": {
    family: "famH",
    first_frame: "first_frame_image",
    last_frame: "last_frame_image",
    durations: [6, 10],
    aspect_ratio_field: null,
    resolution: { field: "resolution", values: { "720p": "768p", "1080p": "1080p" } },
    options: { prompt_optimizer: "prompt_optimizer" }
  }
}

let fal: FalSetup
let replicate: ReplicateSetup
let media: Awaited<ReturnType<typeof startMediaServer>>
const first = () => `${media.url}/first.png`
const last = () => `${media.url}/last.png`

beforeAll(async () => {
  const [png, png2] = await Promise.all([makeImage("png", "160x90"), makeImage("png", "160x90")])
  media = await startMediaServer({
    "/first.png": { body: png, type: "image/png" },
    "/last.png": { body: png2, type: "image/png" }
  })
  fal = await startFalGateway({
    [FAMW]: [{ channel: "fal-market", upstream_model: "fal-ai/wan-25-preview/text-to-video" }],
    [FAMH]: [{ channel: "fal-market", upstream_model: "fal-ai/minimax/hailuo-02/standard/text-to-video" }]
  }, { endpoints: FAL_ENDPOINTS })
  replicate = await startReplicateGateway(
    {
      [FAMH]: [{ channel: "marketplace", upstream_model: "minimax/hailuo-02" }],
      [FAMW]: [{ channel: "marketplace", upstream_model: "wan-video/wan-2.5-i2v" }, "sandbox"]
    },
    { models: REPLICATE_MODELS }
  )
}, 120_000)
afterAll(async () => {
  await fal?.close()
  await replicate?.close()
  await media?.close()
})

describe(`famW and famH on fal and Replicate, by configuration (${backend})`, () => {
  it("famW on fal: a text-only task to Wan 2.5 text-to-video, a first frame to its image-to-video sibling", async () => {
    const text = await runFal(fal, {
      model: FAMW,
      operation: "generation",
      input: { prompt: "lanterns over a river" },
      output: { duration: 5, aspect_ratio: "4:3" },
      provider_options: { famW: { seed: 11, prompt_extend: true } }
    })
    expect(text.task.status).toBe("succeeded")
    expect(text.creates.map((r) => [r.path, r.body])).toEqual([[
      "/fal-ai/wan-25-preview/text-to-video",
      {
        prompt: "lanterns over a river",
        duration: "5",
        aspect_ratio: "4:3",
        resolution: "720p",
        seed: 11,
        enable_prompt_expansion: true
      }
    ]])
    expect((await download(text.task.result!.videos[0]!.url)).probed.audio).toBeDefined()
    nothingOfFal(fal.fake, text.task)
    await expectChargedOnce(fal.gw, text.task.id)

    const framed = await runFal(fal, {
      model: FAMW,
      operation: "generation",
      input: { prompt: "the lanterns rise", image: { url: first() } },
      output: { duration: 10 }
    })
    expect(framed.task.status).toBe("succeeded")
    expect(framed.creates.map((r) => [r.path, r.body])).toEqual([[
      "/fal-ai/wan-25-preview/image-to-video",
      { prompt: "the lanterns rise", image_url: first(), duration: "10", resolution: "720p" }
    ]])
  })

  it("famH on fal: silent by default, text-only and first-and-last-frame tasks to Hailuo 02 Standard", async () => {
    const text = await runFal(fal, {
      model: FAMH,
      operation: "generation",
      input: { prompt: "a heron takes off" },
      output: { duration: 10 },
      provider_options: { famH: { prompt_optimizer: false } }
    })
    expect(text.task.status).toBe("succeeded")
    expect(text.creates.map((r) => [r.path, r.body])).toEqual([[
      "/fal-ai/minimax/hailuo-02/standard/text-to-video",
      { prompt: "a heron takes off", duration: "10", prompt_optimizer: false }
    ]])
    expect((await download(text.task.result!.videos[0]!.url)).probed.audio).toBeUndefined()

    const framed = await runFal(fal, {
      model: FAMH,
      operation: "generation",
      input: { prompt: "the heron lands", image: { url: first() }, reference_images: [{ url: last() }] },
      output: { duration: 6 }
    })
    expect(framed.task.status).toBe("succeeded")
    expect(framed.creates.map((r) => [r.path, r.body])).toEqual([[
      "/fal-ai/minimax/hailuo-02/standard/image-to-video",
      { prompt: "the heron lands", image_url: first(), end_image_url: last(), duration: "6" }
    ]])
  })

  it("what a route cannot take is refused at creation and never sent", async () => {
    const caller = api(fal.gw, await createAccount(fal.gw, { name: "limits", wallet_credits: 100 }))
    const before = fal.fake.requests.length
    // famH makes silent videos only: its table refuses a soundtrack, whatever the route.
    await refused(
      caller.createVideo({
        model: FAMH,
        operation: "generation",
        input: { prompt: "a heron" },
        output: { duration: 6, generate_audio: true }
      }),
      400,
      "invalid_video_parameter"
    )
    // Wan 2.5 on fal always makes sound: a silent famW video cannot be made on this route.
    await refused(
      caller.createVideo({
        model: FAMW,
        operation: "generation",
        input: { prompt: "lanterns" },
        output: { duration: 5, generate_audio: false }
      }),
      400,
      "invalid_video_parameter"
    )
    expect(fal.fake.requests.length).toBe(before)
  })

  it("famH on Replicate: minimax/hailuo-02 with its own field names, the resolution as the model spells it", async () => {
    const text = await runReplicate(replicate, {
      model: FAMH,
      operation: "generation",
      input: { prompt: "a heron over the marsh" },
      output: { duration: 6 },
      provider_options: { famH: { prompt_optimizer: true } }
    })
    expect(text.task.status).toBe("succeeded")
    expect(text.creates.map((r) => [r.path, (r.body as { input: unknown }).input])).toEqual([[
      "/v1/models/minimax/hailuo-02/predictions",
      { prompt: "a heron over the marsh", duration: 6, resolution: "768p", prompt_optimizer: true }
    ]])
    const video = await download(text.task.result!.videos[0]!.url)
    expect(video.probed.video?.codec).toBe("h264")
    expect(video.probed.audio).toBeUndefined()
    nothingOfReplicate(replicate.fake, text.task)

    const framed = await runReplicate(replicate, {
      model: FAMH,
      operation: "generation",
      input: { prompt: "the heron lands", image: { url: first() }, reference_images: [{ url: last() }] },
      output: { duration: 10 }
    })
    expect(framed.task.status).toBe("succeeded")
    expect((framed.creates[0]!.body as { input: unknown }).input).toEqual({
      prompt: "the heron lands",
      first_frame_image: first(),
      last_frame_image: last(),
      duration: 10,
      resolution: "768p"
    })
  })

  it("famW on Replicate: a first frame to wan-video/wan-2.5-i2v; text only to the model's next route", async () => {
    const framed = await runReplicate(replicate, {
      model: FAMW,
      operation: "generation",
      input: { prompt: "lanterns drift", image: { url: first() } },
      output: { duration: 10 },
      provider_options: { famW: { negative_prompt: "rain", prompt_extend: false } }
    })
    expect(framed.task.status).toBe("succeeded")
    expect(framed.creates.map((r) => [r.path, (r.body as { input: unknown }).input])).toEqual([[
      "/v1/models/wan-video/wan-2.5-i2v/predictions",
      {
        prompt: "lanterns drift",
        image: first(),
        duration: 10,
        resolution: "720p",
        negative_prompt: "rain",
        enable_prompt_expansion: false
      }
    ]])
    expect((await download(framed.task.result!.videos[0]!.url)).probed.audio).toBeDefined()

    // Wan on Replicate needs a first frame: text only runs on the sandbox, nothing sent to Replicate.
    const text = await runReplicate(replicate, {
      model: FAMW,
      operation: "generation",
      input: { prompt: "lanterns at dusk" },
      output: { duration: 5 }
    })
    expect(text.task.status).toBe("succeeded")
    expect(text.creates).toEqual([])
    await expectChargedOnce(replicate.gw, text.task.id)
  })
})
