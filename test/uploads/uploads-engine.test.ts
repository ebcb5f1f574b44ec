import { Effect, Either } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Registry } from "../../src/catalog/Registry.ts"
import { validateVideoRequest } from "../../src/catalog/VideoRequest.ts"
import type { VideoTaskRequest } from "../../src/client/Tasks.ts"
import { TaskStore } from "../../src/tasks/TaskStore.ts"
import { createAccount, operator } from "../support/adminApi.ts"
import { api } from "../support/api.ts"
import { configWith } from "../support/config.ts"
import { backend } from "../support/database.ts"
import { sleep } from "../support/eventually.ts"
import { startGateway, type TestGateway } from "../support/gateway.ts"
import { errorOf, expectError, raw } from "../support/http.ts"
import { lastSeen, ledgerOf, pollTask, taskErrorOf } from "../support/tasks.ts"
import {
  confirm,
  image,
  makeAudio,
  makeImage,
  makeVideo,
  startMediaServer,
  uploadAll,
  video
} from "../support/uploads.ts"

/**
 * External reference URLs are checked by the task engine: fetched (http and
 * https only, redirects followed by hand and each hop checked, size and time
 * bounded), inspected, and held to the model's per-file and total limits.
 * A broken rule fails the task with the spec's codes, `retryable: false`,
 * and refunds it. A local HTTP server stands for the external hosts, so the
 * gateway allows private targets, except the one that shows refusal.
 */

let gw: TestGateway
let strict: TestGateway
let server: Awaited<ReturnType<typeof startMediaServer>>

beforeAll(async () => {
  const config = configWith("limits.json", (limits) => {
    limits.engine = { poll_interval_ms: 200, heartbeat_s: 1, lease_s: 10, retry_base_ms: 50 }
  })
  // Confirmed URLs live 200 s there, less than the 300 s before expiry at which confirming again renews them.
  const shortUrls = configWith("limits.json", (limits) => {
    limits.engine = { poll_interval_ms: 200, heartbeat_s: 1, lease_s: 10, retry_base_ms: 50 }
    limits.uploads = { confirmed_url_ttl_s: 200 }
  })
  const [a, b, v2, v3, v4, v8, v10, v11, wav, png] = await Promise.all([
    startGateway({ ROLE: "all", CONFIG_DIR: config }),
    startGateway({ ROLE: "all", CONFIG_DIR: shortUrls, ALLOW_PRIVATE_TARGETS: "false" }),
    makeVideo(2),
    makeVideo(3),
    makeVideo(4, { audio: true }),
    makeVideo(8),
    makeVideo(10),
    makeVideo(11),
    makeAudio("wav", 3),
    makeImage("png")
  ])
  gw = a
  strict = b
  const oversize = new Uint8Array(20_000_001)
  oversize.set(png)
  server = await startMediaServer({
    "/v2.mp4": { body: v2, type: "video/mp4" },
    "/v3.mp4": { body: v3, type: "video/mp4" },
    "/v4.mp4": { body: v4, type: "video/mp4" },
    "/v8.mp4": { body: v8, type: "video/mp4" },
    "/v10.mp4": { body: v10, type: "video/mp4" },
    "/v11.mp4": { body: v11, type: "video/mp4" },
    "/tone.wav": { body: wav, type: "audio/wav" },
    "/still.png": { body: png, type: "image/png" },
    // Served as what it is not.
    "/png-as.mp4": { body: png, type: "video/mp4" },
    "/wav-as.png": { body: wav, type: "image/png" },
    "/cut.mp4": { body: v4.subarray(0, Math.floor(v4.length * 0.6)), type: "video/mp4" },
    "/moved.mp4": { redirect: "/v4.mp4" },
    "/loop-a": { redirect: "/loop-b" },
    "/loop-b": { redirect: "/loop-a", status: 307 },
    "/to-ftp": { redirect: "ftp://files.example.com/v4.mp4" },
    "/busy.mp4": { status: 503 },
    // One byte over the famS image cap (20 MB), with and without a declared length.
    "/huge.png": { body: oversize, type: "image/png" },
    "/huge-chunked.png": { body: oversize, type: "image/png", chunked: true }
  })
})
afterAll(async () => {
  await Promise.all([gw?.close(), strict?.close(), server?.close()])
})

const at = (path: string) => `${server.url}${path}`

const mediaTask = (
  model: string,
  refs: { images?: Array<string>; videos?: Array<string>; audios?: Array<string> }
): VideoTaskRequest => ({
  model,
  operation: "generation",
  input: {
    prompt: "a lantern in the rain",
    reference_mode: "media",
    ...(refs.images ? { reference_images: refs.images.map((url) => ({ url })) } : {}),
    ...(refs.videos ? { reference_videos: refs.videos.map((url) => ({ url })) } : {}),
    ...(refs.audios ? { reference_audios: refs.audios.map((url) => ({ url })) } : {})
  },
  output: { duration: 4 }
})

const create = async (target: TestGateway, key: string, request: VideoTaskRequest) =>
  (await api(target, { model: key }).createVideo(request)).id

const balance = async (target: TestGateway, id: string) => (await operator(target).account(id)).wallet_credits

describe(`reference media in the task engine (${backend})`, () => {
  it("external video, audio and image (reached through a redirect) are fetched, pass the checks, and the task succeeds", async () => {
    const acct = await createAccount(gw, { name: "external-ok", wallet_credits: 100 })
    const before = server.hits.get("/v4.mp4") ?? 0
    const id = await create(
      gw,
      acct.model.key,
      mediaTask("provy-famS-2.0-480p", {
        images: [at("/still.png")],
        videos: [at("/moved.mp4")],
        audios: [at("/tone.wav")]
      })
    )
    const done = lastSeen(await pollTask(gw, acct.resource.key, id))
    expect(done).toMatchObject({ status: "succeeded", error: null })
    expect(server.hits.get("/v4.mp4")).toBe(before + 1)
  })

  it("each broken rule fails the task with the spec's code, retryable false, and refunds it", async () => {
    const acct = await createAccount(gw, { name: "external-bad", wallet_credits: 1000 })
    const cases: Array<[string, VideoTaskRequest, string, RegExp]> = [
      [
        "11 s video",
        mediaTask("provy-famS-2.0-480p", { videos: [at("/v11.mp4")] }),
        "reference_media_duration_exceeded",
        /reference_videos\[0\] lasts 11\.0 s/
      ],
      [
        "2 s video",
        mediaTask("provy-famS-2.0-480p", { videos: [at("/v2.mp4")] }),
        "invalid_reference_media_duration",
        /lasts 2\.0 s/
      ],
      [
        "16 s of video on 2.0",
        mediaTask("provy-famS-2.0-480p", { videos: [at("/v8.mp4"), at("/v8.mp4")] }),
        "reference_media_duration_exceeded",
        /16\.0 s in all.*15 s/
      ],
      [
        "31 s of video on 2.5",
        mediaTask("provy-famS-2.5-480p", { videos: [at("/v10.mp4"), at("/v10.mp4"), at("/v8.mp4"), at("/v3.mp4")] }),
        "reference_media_duration_exceeded",
        /31\.0 s in all.*30\.2 s/
      ],
      [
        "corrupt MP4",
        mediaTask("provy-famS-2.0-480p", { videos: [at("/cut.mp4")] }),
        "invalid_reference_media_duration",
        /cut short/
      ],
      [
        "a PNG as video",
        mediaTask("provy-famS-2.0-480p", { videos: [at("/png-as.mp4")] }),
        "invalid_reference_media_duration",
        /PNG image, not a video/
      ],
      [
        "HTTP 404",
        mediaTask("provy-famS-2.0-480p", { videos: [at("/missing.mp4")] }),
        "invalid_reference_media_duration",
        /HTTP 404/
      ],
      [
        "a redirect loop",
        mediaTask("provy-famS-2.0-480p", { videos: [at("/loop-a")] }),
        "invalid_reference_media_duration",
        /redirects more than 3 times/
      ],
      [
        "a redirect to ftp",
        mediaTask("provy-famS-2.0-480p", { videos: [at("/to-ftp")] }),
        "invalid_reference_media_duration",
        /only http and https/
      ],
      [
        "a WAV as image",
        mediaTask("provy-famS-2.0-480p", { images: [at("/wav-as.png")] }),
        "video_task_failed",
        /reference_images\[0\] is a WAV file, not an image/
      ],
      [
        "an image over 20 MB",
        mediaTask("provy-famS-2.0-480p", { images: [at("/huge.png")] }),
        "video_task_failed",
        /larger than 20000000 bytes/
      ],
      [
        "an image over 20 MB, chunked",
        mediaTask("provy-famS-2.0-480p", { images: [at("/huge-chunked.png")] }),
        "video_task_failed",
        /larger than 20000000 bytes/
      ]
    ]
    const ids = []
    for (const [, json] of cases) ids.push(await create(gw, acct.model.key, json))
    for (const [i, [name, , code, message]] of cases.entries()) {
      const done = lastSeen(await pollTask(gw, acct.resource.key, ids[i]!))
      expect(done.status, name).toBe("failed")
      expect(done.error, name).toEqual({ code, message: expect.stringMatching(message), retryable: false })
      expect(taskErrorOf(done).message, name).not.toMatch(/\/tmp|ffprobe|127\.0\.0\.1/)
      const ledger = await ledgerOf(gw, ids[i]!)
      expect(ledger.map((l) => l.kind), name).toEqual(["charge", "refund"])
      expect(ledger[0]!.wallet_micros + ledger[1]!.wallet_micros, name).toBe(0)
    }
    expect(await balance(gw, acct.id)).toBe(1000)
  })

  it("a host that keeps failing is retried on the engine's schedule, then the task fails as retryable", async () => {
    const acct = await createAccount(gw, { name: "busy", wallet_credits: 100 })
    const id = await create(gw, acct.model.key, mediaTask("provy-famS-2.0-480p", { videos: [at("/busy.mp4")] }))
    const done = lastSeen(await pollTask(gw, acct.resource.key, id))
    expect(done.error).toEqual({
      code: "invalid_reference_media_duration",
      message: expect.stringMatching(/HTTP 503/),
      retryable: true
    })
    // One try and generate_retries (2) more.
    expect(server.hits.get("/busy.mp4")).toBe(3)
    expect(await balance(gw, acct.id)).toBe(100)
  })

  it("totals count confirmed uploads and external URLs together: accepted at creation, refused by the engine", async () => {
    const acct = await createAccount(gw, { name: "mixed", wallet_credits: 100 })
    const [confirmed] = await uploadAll(gw, acct.resource.key, [video((server.routes["/v8.mp4"] as any).body)])
    const id = await create(
      gw,
      acct.model.key,
      mediaTask("provy-famS-2.0-480p", { videos: [confirmed.url, at("/v8.mp4")] })
    )
    const done = lastSeen(await pollTask(gw, acct.resource.key, id))
    expect(done.error).toMatchObject({ code: "reference_media_duration_exceeded", retryable: false })
    expect(taskErrorOf(done).message).toMatch(/16\.0 s in all/)
  })

  it("with ALLOW_PRIVATE_TARGETS false, private and loopback URLs are refused at creation and in the engine; confirmed uploads are not fetched", async () => {
    const acct = await createAccount(strict, { name: "strict", wallet_credits: 100 })
    const port = server.port
    const hitsBefore = [...server.hits.values()].reduce((a, b) => a + b, 0)
    for (
      const url of [
        `http://127.0.0.1:${port}/v4.mp4`,
        `http://localhost:${port}/v4.mp4`,
        `http://vm:${port}/v4.mp4`,
        `http://[::1]:${port}/v4.mp4`,
        `http://10.1.2.3/v4.mp4`
      ]
    ) {
      const reply = await raw(strict, "POST", "/v1/video/tasks", {
        key: acct.model.key,
        json: mediaTask("provy-famS-2.0-480p", { videos: [url] })
      })
      expectError(reply, 400, "invalid_request")
      expect(errorOf(reply.body)?.message).toMatch(
        /input\.reference_videos\[0\].*private, loopback and local addresses are not allowed/
      )
    }
    expect(await balance(strict, acct.id)).toBe(100)

    // A task that holds such a URL anyway (made before the setting changed) fails in the engine without a request being sent.
    const json = mediaTask("provy-famS-2.0-480p", { videos: [`http://127.0.0.1:${port}/v4.mp4`] })
    const task = await strict.runtime.runPromise(Effect.gen(function*() {
      const registry = yield* Registry
      const store = yield* TaskStore
      const request = Either.getOrThrow(validateVideoRequest((m) => registry.video(m)?.capability, json))
      return yield* store.create({
        accountId: acct.id,
        keyId: acct.model.id,
        kind: "video",
        model: request.model,
        operation: "generation",
        request,
        clientReferenceId: null,
        metadata: null,
        idempotencyKey: null,
        digest: "direct",
        // 4 credits: 4 seconds at 1 credit in the default group (multiplier 1).
        price: { unit: "second", unitPrice: 1, quantity: 4, group: "default", subscriptionAllowed: false },
        channel: "sandbox",
        traceparent: null
      })
    }))
    const failed = lastSeen(await pollTask(strict, acct.resource.key, task.task.id))
    expect(failed.error).toEqual({
      code: "invalid_reference_media_duration",
      message: expect.stringMatching(
        /reference_videos\[0\] could not be fetched: its URL is refused: private, loopback/
      ),
      retryable: false
    })
    expect([...server.hits.values()].reduce((a, b) => a + b, 0)).toBe(hitsBefore)
    expect(await balance(strict, acct.id)).toBe(100)

    // The service's own confirmed URLs (here on loopback) are known by their content and never fetched.
    const [clip, still] = await uploadAll(strict, acct.resource.key, [
      video((server.routes["/v4.mp4"] as any).body),
      image((server.routes["/still.png"] as any).body)
    ])
    const ok = await create(
      strict,
      acct.model.key,
      mediaTask("provy-famS-2.0-480p", { images: [still.url], videos: [clip.url] })
    )
    expect(lastSeen(await pollTask(strict, acct.resource.key, ok))).toMatchObject({ status: "succeeded" })

    // Confirming again near the expiry gives a fresh URL; the older one still names the same upload.
    const [long] = await uploadAll(strict, acct.resource.key, [video((server.routes["/v11.mp4"] as any).body)])
    // URLs are signed to the second: a second later, the renewed one differs. The sleep is the scenario.
    await sleep(1100)
    const renewed = (await confirm(strict, acct.resource.key, [long.id]))[0]!
    expect(renewed.id).toBe(long.id)
    expect(renewed.url).not.toBe(long.url)
    for (const url of [long.url, renewed.url]) {
      const reply = await raw(strict, "POST", "/v1/video/tasks", {
        key: acct.model.key,
        json: mediaTask("provy-famS-2.0-480p", { videos: [url] })
      })
      expectError(reply, 400, "reference_media_duration_exceeded")
    }
  })
})
