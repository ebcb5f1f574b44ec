import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { operator } from "../support/adminApi.ts"
import { backend } from "../support/database.ts"
import { probeBytes } from "../support/media.ts"
import { ledgerOf } from "../support/tasks.ts"
import { makeImage, startMediaServer } from "../support/uploads.ts"
import { fieldOf } from "../support/upstream.ts"
import {
  engineRow,
  expectNothingUpstream,
  expectRefunded,
  GEMINI_KEY,
  GEMINI_MODEL,
  runVeo,
  startVeoGateway,
  type VeoSetup,
  VERTEX_MODEL
} from "../support/veo.ts"

/**
 * The `veo` adapter against a fake Veo speaking Google's protocols over HTTP
 * (docs/adapters/veo.md): each famV mode sent as Veo's body, checked literally
 * against its Requests, on the Gemini API and on Vertex AI; results re-hosted
 * by the gateway and playable. Faults and states: channel-veo-faults.test.ts.
 */

const STD = "provx-famV-3.1-standard-720p"
const STD_HD = "provx-famV-3.1-standard-1080p"
const FAST = "provx-famV-3.1-fast-720p"
const V_STD = "provx-famV-3.1-fast-1080p"

let veo: VeoSetup
let media: Awaited<ReturnType<typeof startMediaServer>>
let png: Uint8Array
let jpg: Uint8Array

beforeAll(async () => {
  ;[png, jpg] = await Promise.all([makeImage("png"), makeImage("jpg", "80x60")])
  media = await startMediaServer({
    "/first.png": { body: png, type: "image/png" },
    "/last.jpg": { body: jpg, type: "image/jpeg" }
  })
  veo = await startVeoGateway({
    [STD]: [{ channel: "gemini", upstream_model: GEMINI_MODEL }],
    [FAST]: [{ channel: "gemini", upstream_model: "veo-3.1-fast-generate-preview" }],
    [STD_HD]: [{ channel: "vertex", upstream_model: VERTEX_MODEL }],
    [V_STD]: [{ channel: "vertex", upstream_model: "veo-3.1-fast-generate-001" }]
  })
}, 60_000)
afterAll(async () => {
  await veo?.close()
  await media?.close()
})

const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64")

const download = async (task: any) => {
  const video = task.result.videos[0]
  // Re-hosted: served by the gateway itself, never Google's file or operation.
  expect(new URL(video.url).origin).toBe(veo.gw.url)
  const bytes = new Uint8Array(await (await fetch(video.url)).arrayBuffer())
  return { bytes, probed: await probeBytes(bytes) }
}

describe(`the veo channel, Gemini API: requests and results (${backend})`, () => {
  it("text only: predictLongRunning with the key, polled by name, the file downloaded through its redirect", async () => {
    const { creates, requests, seen, task } = await runVeo(veo, {
      model: STD,
      operation: "generation",
      input: { prompt: "a lighthouse at dusk, waves below" },
      output: { duration: 4 }
    })
    expect(task.status).toBe("succeeded")
    expect(seen.some((t) => t.status === "in_progress")).toBe(true)
    expect(creates).toHaveLength(1)
    expect(creates[0]!.path).toBe("/v1beta/models/veo-3.1-generate-preview:predictLongRunning")
    expect(creates[0]!.headers["x-goog-api-key"]).toBe(GEMINI_KEY)
    expect(creates[0]!.headers.authorization).toBeUndefined()
    expect(creates[0]!.body).toEqual({
      instances: [{ prompt: "a lighthouse at dusk, waves below" }],
      parameters: { aspectRatio: "16:9", durationSeconds: 4, resolution: "720p", sampleCount: 1 }
    })
    const name = (await engineRow(veo.gw, task.id)).upstream_id!
    expect(name).toMatch(/^models\/veo-3\.1-generate-preview\/operations\/[0-9a-f]+$/)
    const polls = requests.filter((r) => r.method === "GET" && r.path === `/v1beta/${name}`)
    expect(polls.length).toBeGreaterThanOrEqual(2)
    expect(polls.every((r) => r.headers["x-goog-api-key"] === GEMINI_KEY)).toBe(true)
    // The key goes to the API's file endpoint, never to the storage host the redirect points at.
    const file = requests.find((r) => r.path.endsWith(":download"))!
    expect(file.headers["x-goog-api-key"]).toBe(GEMINI_KEY)
    const stored = requests.find((r) => r.path.startsWith("/storage/"))!
    expect(stored.headers["x-goog-api-key"]).toBeUndefined()

    const { probed } = await download(task)
    expect(probed.video).toMatchObject({ codec: "h264", width: 160, height: 90 })
    expect(probed.audio?.codec).toBe("aac")
    expect(probed.durationS).toBeGreaterThan(3.8)
    expect(probed.durationS).toBeLessThan(4.3)
    expectNothingUpstream(veo.fake, task)
    expect((await ledgerOf(veo.gw, task.id)).map((l) => l.kind)).toEqual(["charge"])

    // Operators do see Google's operation.
    const view = await operator(veo.gw).task(task.id)
    expect(view.attempts[0]).toMatchObject({ channel: "gemini", outcome: "succeeded" })
    expect(view.attempts[0]?.last_answer).toMatchObject({ name, done: true })
  })

  it("first and last frame with the famV options: image and lastFrame inline, negativePrompt; seed not sent", async () => {
    const { creates, task } = await runVeo(veo, {
      model: FAST,
      operation: "generation",
      input: {
        prompt: "the door opens",
        image: { url: `${media.url}/first.png` },
        reference_images: [{ url: `${media.url}/last.jpg` }]
      },
      output: { duration: 6, aspect_ratio: "9:16" },
      provider_options: { famV: { seed: 7, negative_prompt: "rain" } }
    })
    expect(task.status).toBe("succeeded")
    expect(creates[0]!.path).toBe("/v1beta/models/veo-3.1-fast-generate-preview:predictLongRunning")
    expect(creates[0]!.body).toEqual({
      instances: [{
        prompt: "the door opens",
        image: { bytesBase64Encoded: b64(png), mimeType: "image/png" },
        lastFrame: { bytesBase64Encoded: b64(jpg), mimeType: "image/jpeg" }
      }],
      parameters: {
        aspectRatio: "9:16",
        durationSeconds: 6,
        resolution: "720p",
        sampleCount: 1,
        negativePrompt: "rain"
      }
    })
    const { probed } = await download(task)
    expect(probed.video).toMatchObject({ width: 90, height: 160 })
  })

  it("images mode (standard only): the references as referenceImages of type asset, 8 s at 16:9", async () => {
    const { creates, task } = await runVeo(veo, {
      model: STD,
      operation: "generation",
      input: {
        prompt: "the two characters meet",
        reference_mode: "images",
        reference_images: [{ url: `${media.url}/first.png` }, { url: `${media.url}/last.jpg` }]
      },
      output: { duration: 8 }
    })
    expect(task.status).toBe("succeeded")
    expect(creates[0]!.body).toEqual({
      instances: [{
        prompt: "the two characters meet",
        referenceImages: [
          { image: { bytesBase64Encoded: b64(png), mimeType: "image/png" }, referenceType: "asset" },
          { image: { bytesBase64Encoded: b64(jpg), mimeType: "image/jpeg" }, referenceType: "asset" }
        ]
      }],
      parameters: { aspectRatio: "16:9", durationSeconds: 8, resolution: "720p", sampleCount: 1 }
    })
  })

  it("a silent video cannot be had from the Gemini API: refused before any create, not retryable, refunded", async () => {
    const { creates, task } = await runVeo(veo, {
      model: STD,
      operation: "generation",
      input: { prompt: "silence please" },
      output: { duration: 4, generate_audio: false }
    })
    expect(creates).toHaveLength(0)
    expect(task).toMatchObject({ status: "failed", error: { code: "video_task_failed", retryable: false } })
    expect(task.error?.message).toContain("generate_audio")
    await expectRefunded(veo.gw, task.id)
  })

  it("a reference the guarded fetcher cannot read fails the task before any create", async () => {
    const { creates, task } = await runVeo(veo, {
      model: STD,
      operation: "generation",
      input: { prompt: "from nowhere", image: { url: `${media.url}/missing.png` } },
      output: { duration: 4 }
    })
    expect(creates).toHaveLength(0)
    expect(task).toMatchObject({ status: "failed", error: { code: "video_task_failed" } })
    expect(task.error?.message).toContain("input.image")
    await expectRefunded(veo.gw, task.id)
  })
})

describe(`the veo channel, Vertex AI: requests and results (${backend})`, () => {
  it("text only: a token minted from the service-account key, fetchPredictOperation, the inline video re-hosted", async () => {
    const tokensBefore = veo.fake.tokens.length
    const { creates, requests, task } = await runVeo(veo, {
      model: STD_HD,
      operation: "generation",
      input: { prompt: "a paper boat on a stream" },
      output: { duration: 8, generate_audio: true },
      provider_options: { famV: { seed: 4_294_967_295, negative_prompt: "people" } }
    })
    expect(task.status).toBe("succeeded")
    expect(creates[0]!.path).toBe(
      "/v1/projects/test-project/locations/us-central1/publishers/google/models/veo-3.1-generate-001:predictLongRunning"
    )
    expect(creates[0]!.body).toEqual({
      instances: [{ prompt: "a paper boat on a stream" }],
      parameters: {
        aspectRatio: "16:9",
        durationSeconds: 8,
        resolution: "1080p",
        sampleCount: 1,
        negativePrompt: "people",
        generateAudio: true,
        seed: 4_294_967_295
      }
    })
    const token = requests.find((r) => r.path === "/token")
    if (tokensBefore === 0) expect(token).toBeDefined()
    const bearer = `Bearer ${veo.fake.tokens.at(-1)}`
    expect(creates[0]!.headers.authorization).toBe(bearer)
    const name = (await engineRow(veo.gw, task.id)).upstream_id!
    expect(name).toMatch(
      /^projects\/test-project\/locations\/us-central1\/publishers\/google\/models\/veo-3\.1-generate-001\/operations\/[0-9a-f-]{36}$/
    )
    const polls = requests.filter((r) => r.path.endsWith(":fetchPredictOperation"))
    expect(polls.length).toBeGreaterThanOrEqual(3) // not done, done, and the result read again
    expect(polls[0]!.body).toEqual({ operationName: name })
    expect(polls.every((r) => r.headers.authorization === bearer)).toBe(true)

    const { bytes, probed } = await download(task)
    expect(probed.video).toMatchObject({ codec: "h264", width: 160, height: 90 })
    expect(probed.durationS).toBeGreaterThan(7.8)
    const op = veo.fake.operations.get(name)!
    const { videoOf } = await import("../fakes/veoOperations.ts")
    expect(bytes).toEqual(await videoOf(op))
    expectNothingUpstream(veo.fake, task)
    // The base64 never reaches task_attempts: the operator sees the operation with a marker.
    const view = await operator(veo.gw).task(task.id)
    expect(fieldOf(view.attempts[0]?.last_answer, "response", "videos")).toEqual([
      { bytesBase64Encoded: "veo-inline:0", mimeType: "video/mp4" }
    ])
  })

  it("a first frame and a silent video on Vertex; one token serves every request while it is valid", async () => {
    const { creates, task } = await runVeo(veo, {
      model: V_STD,
      operation: "generation",
      input: { prompt: "the kite rises", image: { url: `${media.url}/first.png` } },
      output: { duration: 8, aspect_ratio: "9:16", generate_audio: false }
    })
    expect(task.status).toBe("succeeded")
    expect(creates[0]!.body).toEqual({
      instances: [{ prompt: "the kite rises", image: { bytesBase64Encoded: b64(png), mimeType: "image/png" } }],
      parameters: { aspectRatio: "9:16", durationSeconds: 8, resolution: "1080p", sampleCount: 1, generateAudio: false }
    })
    expect(veo.fake.tokens).toHaveLength(1)
  })

  it("a 20 MB inline video: stored whole, byte for byte, and playable", async () => {
    veo.fake.scenarios.push({ inlineBytes: 20 * 1024 * 1024 })
    const { task } = await runVeo(veo, {
      model: STD_HD,
      operation: "generation",
      input: { prompt: "a very large result" },
      output: { duration: 8 }
    })
    expect(task.status).toBe("succeeded")
    const { bytes, probed } = await download(task)
    expect(bytes.byteLength).toBe(20 * 1024 * 1024)
    expect(probed.video).toMatchObject({ codec: "h264" })
  }, 120_000)
})
