// Runs once: no database (the official client against the fake only)
import { OpenRouter } from "@openrouter/sdk"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { FAKE_MODELS, type FakeOpenRouter, startFakeOpenRouter } from "../fakes/openrouter.ts"
import { probeBytes } from "../support/media.ts"

/**
 * The official client, `@openrouter/sdk`, drives the fake OpenRouter
 * (test/fakes/openrouter.ts): it generates a video, gets the generation until
 * it completes and fetches its content, lists the video models and reads the
 * key, each answer parsed by the client's own schemas. So the fake the
 * adapter's tests run against speaks OpenRouter's real protocol, paths,
 * fields, statuses and error envelope (docs/adapters/openrouter.md, Tests).
 */

const KEY = "sk-or-v1-sdk0123456789abcdef0123456789abcdef"
let fake: FakeOpenRouter
let client: OpenRouter

beforeAll(async () => {
  fake = await startFakeOpenRouter(KEY)
  client = new OpenRouter({
    apiKey: KEY,
    serverURL: fake.url,
    httpReferer: "https://media-gateway.example.com",
    appTitle: "Media Task Gateway",
    // The client's own retries would hide the fake's refusals.
    retryConfig: { strategy: "none" }
  })
})
afterAll(async () => {
  await fake?.close()
})

const bytesOf = async (stream: ReadableStream<Uint8Array>) => new Uint8Array(await new Response(stream).arrayBuffer())

describe("the official OpenRouter client against the fake", () => {
  it("generate, get the generation until completed, fetch its content: a real MP4", async () => {
    const submitted = await client.videoGeneration.generate({
      videoGenerationRequest: {
        model: "kwaivgi/kling-v3.0-std",
        prompt: "a paper boat on a pond",
        duration: 5,
        aspectRatio: "9:16",
        generateAudio: true,
        frameImages: [{
          type: "image_url",
          imageUrl: { url: "https://example.com/first.png" },
          frameType: "first_frame"
        }]
      }
    })
    expect(submitted.status).toBe("pending")
    expect(submitted.id).toMatch(/^gen-vid-\d+-[A-Za-z0-9_-]{20}$/)
    expect(submitted.pollingUrl).toBe(`${new URL(fake.url).origin}/api/v1/videos/${submitted.id}`)
    // What went over the wire: the client's snake_case body, the key and the attribution headers.
    const sent = fake.requests.find((q) => q.method === "POST")!
    expect(sent.headers.authorization).toBe(`Bearer ${KEY}`)
    expect(sent.headers["http-referer"]).toBe("https://media-gateway.example.com")
    expect(sent.headers["x-openrouter-title"]).toBe("Media Task Gateway")
    expect(sent.body).toEqual({
      model: "kwaivgi/kling-v3.0-std",
      prompt: "a paper boat on a pond",
      duration: 5,
      aspect_ratio: "9:16",
      generate_audio: true,
      frame_images: [{
        type: "image_url",
        image_url: { url: "https://example.com/first.png" },
        frame_type: "first_frame"
      }]
    })

    const seen: Array<string> = []
    let job = await client.videoGeneration.getGeneration({ jobId: submitted.id })
    for (let i = 0; job.status !== "completed" && i < 10; i++) {
      seen.push(job.status)
      job = await client.videoGeneration.getGeneration({ jobId: submitted.id })
    }
    expect(seen).toEqual(["pending", "in_progress"])
    expect(job).toMatchObject({ status: "completed", usage: { cost: 0.4, isByok: false } })
    expect(job.generationId).toMatch(/^gen-/)
    expect(job.unsignedUrls).toEqual([`${new URL(fake.url).origin}/api/v1/videos/${submitted.id}/content?index=0`])

    const content = await client.videoGeneration.getVideoContent({ jobId: submitted.id, index: 0 })
    const probed = await probeBytes(await bytesOf(content))
    expect(probed.video).toMatchObject({ codec: "h264", width: 90, height: 160 })
    expect(probed.audio?.codec).toBe("aac")
    expect(probed.durationS).toBeGreaterThan(4.8)
  })

  it("refusals come back as the client's error classes, from OpenRouter's envelope", async () => {
    const wrong = new OpenRouter({ apiKey: "sk-or-v1-wrong", serverURL: fake.url, retryConfig: { strategy: "none" } })
    await expect(wrong.videoGeneration.generate({ videoGenerationRequest: { model: "google/veo-3.1", prompt: "x" } }))
      .rejects.toMatchObject({ name: "UnauthorizedResponseError", statusCode: 401, error: { code: 401 } })
    await expect(
      client.videoGeneration.generate({ videoGenerationRequest: { model: "google/veo-3.1", prompt: "x", duration: 5 } })
    ).rejects.toMatchObject({ name: "BadRequestResponseError", statusCode: 400, error: { code: 400 } })
    fake.faults.create.push({ kind: "rate_limited", retryAfter: "2" })
    await expect(client.videoGeneration.generate({ videoGenerationRequest: { model: "google/veo-3.1", prompt: "y" } }))
      .rejects.toMatchObject({ name: "TooManyRequestsResponseError", statusCode: 429 })
    await expect(client.videoGeneration.getGeneration({ jobId: "gen-vid-0-nosuchjob00000000000" }))
      .rejects.toMatchObject({ name: "NotFoundResponseError", statusCode: 404 })
  })

  it("lists the video models with what each takes, and reads the key (the channel check's call)", async () => {
    const { data } = await client.videoGeneration.listVideosModels()
    expect(data.map((m) => m.id)).toEqual(FAKE_MODELS.map((m) => m.id))
    expect(data.find((m) => m.id === "google/veo-3.1-lite")).toMatchObject({
      supportedDurations: [4, 6, 8],
      supportedResolutions: ["720p", "1080p"],
      supportedFrameImages: ["first_frame"]
    })
    const key = await client.apiKeys.getCurrentKeyMetadata()
    expect(typeof key.data.label).toBe("string")
  })
})
