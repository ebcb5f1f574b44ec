import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { ImageTaskRequest, VideoTaskRequest } from "../../src/client/Tasks.ts"
import { createAccount, operator } from "../support/adminApi.ts"
import { api } from "../support/api.ts"
import { configWith } from "../support/config.ts"
import { backend, createDatabase } from "../support/database.ts"
import { eventually } from "../support/eventually.ts"
import { ADMIN_TOKEN, freePort } from "../support/gateway.ts"
import type { Target } from "../support/http.ts"
import { probeBytes } from "../support/media.ts"
import { replyOf } from "../support/opsApi.ts"
import { RUNTIME, type Service, start, stop, waitForHealth } from "../support/process.ts"
import { type Receiver, startReceiver, verifyStandardWebhook } from "../support/receiver.ts"
import { keptAlive } from "../support/socket.ts"
import {
  audio,
  createSessions,
  image,
  makeAudio,
  makeImage,
  makeVideo,
  putBytes,
  uploadAll,
  video
} from "../support/uploads.ts"

/**
 * The API of one service process, started the way the runtime under test
 * starts it (`RUNTIME=deno`: on Deno; otherwise on Node): the three-step
 * upload to the local store, a task of each family and kind, the result
 * downloaded whole and by range, a multipart image edit, and the account's
 * webhook. The in-process suites prove the behaviour in detail on Node; this
 * file proves the same service runs it on another runtime.
 */

let service: Service
let target: Target
let hook: Receiver
let dataDir: string
let configDir: string
let db: Awaited<ReturnType<typeof createDatabase>>
let acct: Awaited<ReturnType<typeof createAccount>>
let webhookKey: string
/** Every task this file finished, with the terminal status it reached: each must be announced to the webhook. */
const finished = new Map<string, string>()

beforeAll(async () => {
  hook = await startReceiver(() => 200)
  dataDir = mkdtempSync(join(tmpdir(), "gw-api-process-"))
  db = await createDatabase()
  configDir = configWith("limits.json", (limits) => {
    limits.engine = { poll_interval_ms: 200 }
    for (const rate of Object.values(limits.rate_limits) as Array<any>) rate.per_second = rate.burst = 100_000
  })
  const port = await freePort()
  target = { url: `http://127.0.0.1:${port}` }
  service = start(
    {
      ROLE: "all",
      DATA_DIR: dataDir,
      CONFIG_DIR: configDir,
      ADMIN_TOKEN,
      PUBLIC_BASE_URL: target.url,
      // The receiver and the reference media are on loopback.
      ALLOW_PRIVATE_TARGETS: "true",
      ...(db.url ? { DATABASE_URL: db.url } : {})
    },
    port,
    "node"
  )
  expect(await waitForHealth(service, 90_000), service.output()).toBe(true)
  acct = await createAccount(target, { name: "runtime", wallet_credits: 1000 })
  const set = await replyOf(
    operator(target).call((c) =>
      c.adminWebhooks.setWebhook({ path: { id: acct.id }, payload: { url: hook.url }, withResponse: true })
    )
  )
  expect(set.status).toBe(200)
  webhookKey = set.body.key
}, 120_000)

afterAll(async () => {
  if (service !== undefined) {
    await stop(service)
    // The drain of SIGTERM ends in a clean exit on every runtime.
    expect(await service.exited).toBe(0)
  }
  await hook?.close()
  await db?.drop()
  rmSync(dataDir, { recursive: true, force: true })
  rmSync(configDir, { recursive: true, force: true })
})

/** Creates a task (the answer must be a 202); its id. */
const createVideo = async (request: VideoTaskRequest) => (await api(target, acct).createVideo(request)).id
const createImage = async (request: ImageTaskRequest) => (await api(target, acct).createImage(request)).id

/** Polls a task until it ends; a deadline, not a speed measurement. */
const finish = <K extends "video" | "image">(kind: K, id: string) =>
  eventually(
    async () => {
      const task = await api(target, acct).getTask(kind, id)
      if (task.status !== "succeeded" && task.status !== "failed") return undefined
      finished.set(id, `${kind}.task.${task.status}`)
      return task
    },
    `task ${id} finished`,
    { deadlineMs: 120_000 }
  )

const withKey = (range?: string) => ({
  headers: { authorization: `Bearer ${acct.resource.key}`, ...(range === undefined ? {} : { range }) }
})

describe(`the API of a service process (${RUNTIME}, ${backend})`, { timeout: 180_000 }, () => {
  it("the three-step upload: a video, an audio and an image PUT to the local store, confirmed, then used by a famS task", async () => {
    const files = [
      video(await makeVideo(4, { audio: true })),
      audio(await makeAudio("wav", 2), "wav"),
      image(await makeImage("png"))
    ]
    const confirmed = await uploadAll(target, acct.resource.key, files)
    expect(confirmed.map((c) => c.kind)).toEqual(["video", "audio", "image"])

    // The confirmed URL serves exactly the bytes that were PUT.
    const served = new Uint8Array(await (await fetch(confirmed[0].url)).arrayBuffer())
    expect(served).toEqual(files[0]!.bytes)

    const id = await createVideo({
      model: "provy-famS-2.0-480p",
      operation: "generation",
      input: {
        prompt: "a lantern in the rain",
        reference_mode: "media",
        reference_videos: [{ url: confirmed[0].url }],
        reference_audios: [{ url: confirmed[1].url }],
        reference_images: [{ url: confirmed[2].url }]
      },
      output: { duration: 4 }
    })
    expect(await finish("video", id)).toMatchObject({ status: "succeeded", error: null })
  })

  it("a PUT the store refuses is answered 403 and its connection then carries the upload's PUT", async () => {
    // Deno 2.9's node:http does not drain a request body the handler left unread (docs/operating.md,
    // On Deno). So on `deno run -A src/main.ts` (the Node server under Deno's node:http) an answer sent
    // before the request body was read leaves that body in the connection: the refused PUT's 403 and
    // the next request on the connection stall until the idle timeout resets it.
    const bytes = new Uint8Array(1_000_000).fill(7)
    const [session] = await createSessions(target, acct.resource.key, [video(bytes, "big.mp4")])
    const url = new URL(session.upload_url)
    const put = (type: string) =>
      `PUT ${url.pathname}${url.search} HTTP/1.1\r\nHost: ${url.host}\r\nContent-Type: ${type}\r\nContent-Length: ${bytes.length}`
    const connection = await keptAlive(Number(url.port))
    let next = connection
    try {
      const refused = await connection.send(put("video/quicktime"), bytes)
      expect(refused.status).toBe(403)
      expect(JSON.parse(refused.body).error.code).toBe("invalid_signature")
      // A server may close a connection whose body it did not read, but only after saying so.
      if (refused.close) next = await keptAlive(Number(url.port))
      expect((await next.send(put("video/mp4"), bytes)).status).toBe(200)
    } finally {
      connection.close()
      next.close()
    }
    // And through fetch, as any client sends it: a long wrong-length body is a 403, the right one a 200.
    const big = new Uint8Array(6_000_000).fill(7)
    const [again] = await createSessions(target, acct.resource.key, [video(big, "big.mp4")])
    expect(await putBytes(again, big.subarray(1))).toBe(403)
    expect(await putBytes(again, big)).toBe(200)
  })

  it("a video task of each family succeeds; its result downloads whole and by range", async () => {
    const ids = await Promise.all(
      ["provy-famS-2.0-480p", "provx-famV-3.1-fast-720p", "provx-famK-3.0-720p"].map((model) =>
        createVideo({
          model,
          operation: "generation",
          input: { prompt: `a fox (${model})` },
          output: { duration: 4 }
        })
      )
    )
    const tasks = await Promise.all(ids.map((id) => finish("video", id)))
    for (const task of tasks) expect(task, task.model).toMatchObject({ status: "succeeded", error: null })

    const item = tasks[0]!.result!.videos[0]!
    const whole = await fetch(item.url, item.url_auth === "resource_api_key" ? withKey() : {})
    expect(whole.status).toBe(200)
    const bytes = new Uint8Array(await whole.arrayBuffer())
    expect(Number(whole.headers.get("content-length"))).toBe(bytes.byteLength)
    expect((await probeBytes(bytes)).video).toMatchObject({ codec: "h264", width: item.width, height: item.height })

    const content = `/v1/assets/${item.asset_id}/content`
    const part = await fetch(target.url + content, withKey("bytes=100-1099"))
    expect(part.status).toBe(206)
    expect(part.headers.get("content-range")).toBe(`bytes 100-1099/${bytes.byteLength}`)
    expect(new Uint8Array(await part.arrayBuffer())).toEqual(bytes.subarray(100, 1100))
    const beyond = await fetch(target.url + content, withKey(`bytes=${bytes.byteLength + 10}-`))
    expect(beyond.status).toBe(416)
    await beyond.arrayBuffer()
  })

  it("image tasks: a JSON generation and a multipart edit succeed, and their images decode", async () => {
    const generated = await createImage({
      model: "provy-image-1-fast",
      operation: "generation",
      input: { prompt: "a kite" },
      output: { size: "512x512" }
    })
    const form = new FormData()
    for (
      const [k, v] of Object.entries({
        model: "provx-image-1",
        operation: "edit",
        prompt: "add a hat",
        size: "512x512",
        output_format: "png"
      })
    ) {
      form.append(k, v)
    }
    form.append("image", new Blob([(await makeImage("png", "256x256")).slice()], { type: "image/png" }), "a.png")
    const edit = await api(target, acct).createImageReply(form)
    expect(edit.status, JSON.stringify(edit.task)).toBe(202)

    for (const id of [generated, edit.task.id]) {
      const task = await finish("image", id)
      expect(task).toMatchObject({ status: "succeeded", error: null })
      const item = task.result!.images[0]!
      const res = await fetch(item.url, item.url_auth === "resource_api_key" ? withKey() : {})
      expect(res.status).toBe(200)
      const probed = await probeBytes(new Uint8Array(await res.arrayBuffer()))
      expect(probed.video).toMatchObject({ width: 512, height: 512 })
    }
  })

  it("the account's webhook receives every terminal event of this file's tasks, signed with its key", async () => {
    expect(finished.size).toBeGreaterThanOrEqual(6)
    const receipts = await eventually(
      async () => {
        const byTask = new Map(hook.receipts.map((r) => [r.json?.data?.object?.id, r]))
        return [...finished.keys()].every((id) => byTask.has(id)) ? byTask : undefined
      },
      "an event for every task",
      { deadlineMs: 60_000 }
    )
    for (const [id, type] of finished) {
      const receipt = receipts.get(id)!
      expect(receipt.json.type, id).toBe(type)
      verifyStandardWebhook(receipt, webhookKey)
    }
  })
})
