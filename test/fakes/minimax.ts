import ffmpeg from "@ffmpeg-installer/ffmpeg"
import { execFile } from "node:child_process"
import { mkdtempSync, readFileSync } from "node:fs"
import { createServer, type IncomingHttpHeaders, type ServerResponse } from "node:http"
import type { Socket } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { promisify } from "node:util"
import { listenOnLoopback } from "../support/fakeServer.ts"

/**
 * A fake MiniMax video generation API on loopback (docs/adapters/minimax.md,
 * Tests), speaking the protocol as MiniMax documents it:
 *
 * - `POST /v1/video_generation` (JSON; `model`, `prompt`, `first_frame_image`,
 *   `last_frame_image` for MiniMax-Hailuo-02 only, `duration` 6 or 10,
 *   `resolution` 512P/768P/1080P with 10 s at 768P or 512P only,
 *   `prompt_optimizer`, `fast_pretreatment`, `callback_url`, `aigc_watermark`)
 *   → `{ task_id, base_resp }`;
 * - `GET /v1/query/video_generation?task_id=` → `status` (Preparing,
 *   Queueing, Processing, Success, Fail), `file_id`, `video_width`,
 *   `video_height`;
 * - `GET /v1/files/retrieve?file_id=` → `file.download_url`, a link to
 *   `GET /download/{file}.mp4` serving a real silent H.264 MP4 of the
 *   task's resolution and seconds (Hailuo's videos have no soundtrack);
 * - `GET /v1/files/list?purpose=` (the channel check);
 * - a create with `callback_url`: MiniMax's verification request first
 *   (`POST {"challenge": "…"}`, the same value expected back in a 200 JSON
 *   answer within 3 s), then, only if it was echoed, a status update
 *   (`task_id`, `status` processing/success/failed, `file_id`, `base_resp`)
 *   each time the task changes. Such a task moves on with time
 *   (`CALLBACK_STEP_MS` per status), not with queries, so a test can slow
 *   polling and still see it end.
 *
 * Errors come as MiniMax sends them: HTTP 200 with `base_resp.status_code`
 * other than 0 (1004 without the key, 2049 with a wrong one, 2013 for
 * invalid parameters). Each route takes faults a test queues; every
 * request is recorded, so tests assert the exact upstream body.
 */

export type Fault =
  /** HTTP 200 with MiniMax's error envelope: `base_resp.status_code` and `status_msg`. */
  | { readonly kind: "code"; readonly code: number; readonly message: string }
  /** MiniMax's rate limit: HTTP 200, 1002 "rate limit" (no retry hint, as MiniMax sends it). */
  | { readonly kind: "rate_limited" }
  /** HTTP 429 with `Retry-After` (seconds), as a gateway in front of the API sends it. */
  | { readonly kind: "http429"; readonly retryAfter: string }
  /** A 5xx with an HTML page, as a load balancer sends. */
  | { readonly kind: "html"; readonly status: number }
  /** Never answers. */
  | { readonly kind: "hang" }
  /** Create only: the task is created (and will finish), but the answer never comes. */
  | { readonly kind: "lost" }
  /** Reads the request, then drops the connection. */
  | { readonly kind: "reset" }

/** How one created task lives. */
export interface Life {
  /** Only for the task created with this prompt; any when absent. */
  readonly prompt?: string
  /** The status each query answers, in order, the last one repeated. */
  readonly statuses: ReadonlyArray<string>
  /** `base_resp` of a `Fail` (e.g. 1027, the output is sensitive); 0 "success" when absent. */
  readonly failCode?: { readonly code: number; readonly message: string }
  /** Its download link answers this status (the link has lapsed). */
  readonly expired?: 403 | 404
}

export interface MinimaxRequest {
  readonly at: number
  readonly method: string
  readonly path: string
  readonly query: URLSearchParams
  readonly headers: IncomingHttpHeaders
  /** The JSON body's members (empty for a GET). */
  readonly body: Record<string, any>
}

export interface MinimaxTask {
  readonly id: string
  readonly body: Record<string, any>
  readonly life: Life
  readonly fileId: string
  polls: number
  said: string | undefined
  /** When it was created (its statuses move on with time when it has a `callback_url`). */
  readonly createdAt: number
  /** Whether the receiver echoed MiniMax's challenge; undefined until it answered (or without `callback_url`). */
  verified: boolean | undefined
}

/** One request the fake sent to a `callback_url`: the verification or a status update, and what came back. */
export interface MinimaxCallback {
  readonly at: number
  readonly taskId: string
  readonly url: string
  readonly kind: "challenge" | "update"
  readonly body: Record<string, unknown>
  /** The receiver's HTTP status (0: no answer within 3 s, or no connection). */
  readonly status: number
  readonly contentType: string | undefined
  readonly answer: string
}

export interface FakeMinimax {
  /** The base URL a channel is configured with: `http://127.0.0.1:port`. */
  readonly url: string
  readonly requests: Array<MinimaxRequest>
  readonly faults: {
    readonly create: Array<Fault>
    readonly query: Array<Fault>
    readonly retrieve: Array<Fault>
    readonly download: Array<Fault>
  }
  readonly lives: Array<Life>
  readonly tasks: Map<string, MinimaxTask>
  /** Every verification request and status update sent to a `callback_url`, in order. */
  readonly callbacks: Array<MinimaxCallback>
  /** Renders the videos of these resolutions and seconds ahead, so a test's first download does not wait on ffmpeg. */
  readonly warmUp: (shapes: ReadonlyArray<readonly [string, number]>) => Promise<void>
  readonly close: () => Promise<void>
}

export const MODELS = new Set([
  "MiniMax-Hailuo-2.3",
  "MiniMax-Hailuo-2.3-Fast",
  "MiniMax-Hailuo-02",
  "T2V-01-Director",
  "I2V-01-Director",
  "I2V-01-live",
  "I2V-01",
  "T2V-01"
])
const HAILUO = new Set(["MiniMax-Hailuo-2.3", "MiniMax-Hailuo-2.3-Fast", "MiniMax-Hailuo-02"])
const FIELDS = new Set([
  "model",
  "prompt",
  "first_frame_image",
  "last_frame_image",
  "duration",
  "resolution",
  "prompt_optimizer",
  "fast_pretreatment",
  "callback_url",
  "aigc_watermark"
])
const SIZES: Record<string, string> = {
  "512P": "912x512",
  "768P": "1366x768",
  "1080P": "1920x1080",
  "720P": "1280x720"
}
const DEFAULT_LIFE: Life = { statuses: ["Queueing", "Processing", "Success"] }
const PURPOSES = new Set(["voice_clone", "prompt_audio", "t2a_async_input"])

/** The status word of a callback (MiniMax's callback statuses), or undefined for one it does not post. */
const CALLBACK_STATUS: Readonly<Record<string, string>> = {
  Processing: "processing",
  Success: "success",
  Fail: "failed"
}

/** How long each status of a task with a `callback_url` lasts (ms). */
export const CALLBACK_STEP_MS = 300

const exec = promisify(execFile)
const scratch = mkdtempSync(join(tmpdir(), "fake-minimax-"))
const rendered = new Map<string, Promise<Uint8Array>>()

/** A silent H.264 MP4 of that size and seconds, made once per shape. */
const silentMovie = (size: string, seconds: number) => {
  const key = `${size}-${seconds}`
  if (!rendered.has(key)) {
    const file = join(scratch, `${key}.mp4`)
    rendered.set(
      key,
      exec(ffmpeg.path, [
        ...["-v", "error", "-f", "lavfi", "-i", `testsrc2=size=${size}:rate=12:duration=${seconds}`],
        ...["-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-movflags", "+faststart", "-y", file]
      ]).then(() => new Uint8Array(readFileSync(file)))
    )
  }
  return rendered.get(key)!
}

const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) =>
  res.writeHead(status, { "content-type": "application/json", "trace-id": `trace-fake-${Date.now()}`, ...headers })
    .end(JSON.stringify(body))

/** MiniMax's error envelope, on HTTP 200 as it sends them. */
const baseResp = (res: ServerResponse, code: number, message: string, more: Record<string, unknown> = {}) =>
  json(res, 200, { ...more, base_resp: { status_code: code, status_msg: message } })

const ok = { status_code: 0, status_msg: "success" }

/** What MiniMax would refuse in a create (its 2013 "invalid params"), or undefined. */
const invalidCreate = (body: Record<string, any>): string | undefined => {
  const unknown = Object.keys(body).find((k) => !FIELDS.has(k))
  if (unknown !== undefined) return `invalid params, unknown field ${unknown}`
  if (typeof body.model !== "string" || !MODELS.has(body.model)) return "invalid params, model"
  const hasFirst = body.first_frame_image !== undefined
  if (hasFirst && (typeof body.first_frame_image !== "string" || body.first_frame_image === "")) {
    return "invalid params, first_frame_image"
  }
  if (body.model === "MiniMax-Hailuo-2.3-Fast" && !hasFirst) return "invalid params, first_frame_image is required"
  if (typeof body.prompt !== "string" || body.prompt.length > 2000) return "invalid params, prompt"
  if (body.prompt === "" && !hasFirst) return "invalid params, prompt is required"
  if (body.last_frame_image !== undefined) {
    if (body.model !== "MiniMax-Hailuo-02") return "invalid params, last_frame_image is not supported by this model"
    if (typeof body.last_frame_image !== "string" || !hasFirst) return "invalid params, last_frame_image"
  }
  for (const flag of ["prompt_optimizer", "fast_pretreatment", "aigc_watermark"]) {
    if (body[flag] !== undefined && typeof body[flag] !== "boolean") return `invalid params, ${flag}`
  }
  if (body.callback_url !== undefined && typeof body.callback_url !== "string") return "invalid params, callback_url"
  const duration = body.duration ?? 6
  const resolution = body.resolution ?? (HAILUO.has(body.model) ? "768P" : "720P")
  if (!Number.isInteger(duration) || ![6, 10].includes(duration)) return "invalid params, duration"
  if (HAILUO.has(body.model)) {
    if (!["512P", "768P", "1080P"].includes(resolution)) return "invalid params, resolution"
    if (resolution === "512P" && (body.model !== "MiniMax-Hailuo-02" || !hasFirst)) {
      return "invalid params, resolution"
    }
    if (resolution === "512P" && body.last_frame_image !== undefined) return "invalid params, resolution"
    if (resolution === "1080P" && duration !== 6) return "invalid params, 1080P supports 6s only"
  } else if (resolution !== "720P" || duration !== 6) return "invalid params, duration or resolution"
  return undefined
}

export const startFakeMinimax = async (apiKey: string): Promise<FakeMinimax> => {
  let port = 0
  let counter = 106916112212032
  const timers = new Set<NodeJS.Timeout>()
  const fake: Omit<FakeMinimax, "url" | "close"> = {
    requests: [],
    faults: { create: [], query: [], retrieve: [], download: [] },
    lives: [],
    tasks: new Map(),
    callbacks: [],
    warmUp: async (shapes) => {
      await Promise.all(shapes.map(([resolution, seconds]) => silentMovie(SIZES[resolution]!, seconds)))
    }
  }
  const takeLife = (prompt: string) => {
    const at = fake.lives.findIndex((life) => life.prompt === undefined || life.prompt === prompt)
    return at < 0 ? DEFAULT_LIFE : fake.lives.splice(at, 1)[0]!
  }
  const later = (ms: number, run: () => void) => {
    const timer = setTimeout(() => (timers.delete(timer), run()), ms)
    timers.add(timer)
  }
  /** The status a task is in now: by the queries it had, or by time when MiniMax calls it back. */
  const statusOf = (task: MinimaxTask) => {
    const last = task.life.statuses.length - 1
    const step = typeof task.body.callback_url === "string"
      ? Math.floor((Date.now() - task.createdAt) / CALLBACK_STEP_MS)
      : task.polls
    task.polls++
    return task.life.statuses[Math.min(step, last)]!
  }
  const resultOf = (task: MinimaxTask, status: string) => {
    const [width, height] = sizeOf(task).split("x").map(Number)
    const base = status === "Fail" && task.life.failCode !== undefined
      ? { status_code: task.life.failCode.code, status_msg: task.life.failCode.message }
      : ok
    return {
      task_id: task.id,
      status,
      ...(status === "Success" ? { file_id: task.fileId, video_width: width, video_height: height } : {}),
      base_resp: base
    }
  }
  /** POSTs to the task's `callback_url` as MiniMax does (3 s to answer), recorded. */
  const call = async (task: MinimaxTask, kind: MinimaxCallback["kind"], body: Record<string, unknown>) => {
    const url = String(task.body.callback_url)
    const answered = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(3000)
    }).then(async (r) => ({
      status: r.status,
      contentType: r.headers.get("content-type") ?? undefined,
      answer: await r.text()
    }))
      .catch(() => ({ status: 0, contentType: undefined, answer: "" }))
    const record: MinimaxCallback = { at: Date.now(), taskId: task.id, url, kind, body, ...answered }
    fake.callbacks.push(record)
    return record
  }
  /** The verification, then (only if the challenge came back) an update at each change MiniMax reports. */
  const callBack = async (task: MinimaxTask) => {
    const challenge = `challenge-${task.id}-${Math.random().toString(36).slice(2)}`
    const verification = await call(task, "challenge", { challenge })
    let echoed: unknown
    try {
      echoed = JSON.parse(verification.answer)
    } catch {
      echoed = undefined
    }
    task.verified = verification.status === 200 &&
      (echoed as { challenge?: unknown } | undefined)?.challenge === challenge
    if (!task.verified) return
    const statuses = task.life.statuses
    statuses.forEach((status, n) => {
      const word = CALLBACK_STATUS[status]
      if (word === undefined || (n > 0 && statuses[n - 1] === status)) return
      const at = Math.max(0, task.createdAt + n * CALLBACK_STEP_MS - Date.now())
      later(at, () => void call(task, "update", { ...resultOf(task, status), status: word }))
    })
  }
  const byFile = (fileId: string) => [...fake.tasks.values()].find((t) => t.fileId === fileId)
  const sizeOf = (task: MinimaxTask) => SIZES[task.body.resolution ?? "768P"]!

  const answer = async (request: MinimaxRequest, res: ServerResponse, socket: Socket) => {
    const route = request.method === "POST" && request.path === "/v1/video_generation"
      ? "create"
      : request.method === "GET" && request.path === "/v1/query/video_generation"
      ? "query"
      : request.method === "GET" && request.path === "/v1/files/retrieve"
      ? "retrieve"
      : request.method === "GET" && request.path.startsWith("/download/")
      ? "download"
      : request.method === "GET" && request.path === "/v1/files/list"
      ? "list"
      : undefined
    if (route === undefined) return json(res, 404, { error: "404 page not found" })
    // The storage link is signed, not keyed: it takes no Authorization.
    if (route !== "download") {
      const auth = request.headers.authorization
      if (auth === undefined || !auth.startsWith("Bearer ")) {
        return baseResp(
          res,
          1004,
          "login fail: Please carry the API secret key in the 'Authorization' field of the request header"
        )
      }
      if (auth !== `Bearer ${apiKey}`) return baseResp(res, 2049, "invalid api key")
    }
    const fault = route === "list" ? undefined : fake.faults[route].shift()
    if (fault?.kind === "hang") return
    if (fault?.kind === "reset") return socket.destroy()
    if (fault?.kind === "code") return baseResp(res, fault.code, fault.message)
    if (fault?.kind === "rate_limited") return baseResp(res, 1002, "rate limit")
    if (fault?.kind === "http429") {
      return json(res, 429, { base_resp: { status_code: 1002, status_msg: "rate limit" } }, {
        "retry-after": fault.retryAfter
      })
    }
    if (fault?.kind === "html") {
      return res.writeHead(fault.status, { "content-type": "text/html" })
        .end("<html><body><h1>502 Bad Gateway</h1><p>openresty hailuo-edge-3</p></body></html>")
    }

    switch (route) {
      case "create": {
        if (!String(request.headers["content-type"] ?? "").startsWith("application/json")) {
          return baseResp(res, 2013, "invalid params, content-type must be application/json")
        }
        const invalid = invalidCreate(request.body)
        if (invalid !== undefined) return baseResp(res, 2013, invalid)
        const id = String(counter++)
        const task: MinimaxTask = {
          id,
          body: request.body,
          life: takeLife(String(request.body.prompt)),
          fileId: String(counter++ * 7),
          polls: 0,
          said: undefined,
          createdAt: Date.now(),
          verified: undefined
        }
        fake.tasks.set(id, task)
        if (typeof request.body.callback_url === "string") later(50, () => void callBack(task))
        if (fault?.kind === "lost") return
        return json(res, 200, { task_id: id, base_resp: ok })
      }
      case "query": {
        const task = fake.tasks.get(request.query.get("task_id") ?? "")
        if (task === undefined) return baseResp(res, 2013, "invalid params, task not found")
        const status = statusOf(task)
        task.said = status
        return json(res, 200, resultOf(task, status))
      }
      case "retrieve": {
        const fileId = request.query.get("file_id") ?? ""
        const task = byFile(fileId)
        if (task === undefined || task.said !== "Success") return baseResp(res, 2013, "invalid params, file not found")
        return json(res, 200, {
          file: {
            file_id: fileId,
            bytes: 0,
            created_at: Math.floor(Date.now() / 1000),
            filename: "output_aigc.mp4",
            purpose: "video_generation",
            download_url: `http://127.0.0.1:${port}/download/${fileId}.mp4?Expires=${Date.now() + 9 * 3600_000}`
          },
          base_resp: ok
        })
      }
      case "download": {
        const task = byFile(request.path.slice("/download/".length).replace(/\.mp4$/, ""))
        if (task === undefined) return res.writeHead(404).end()
        if (task.life.expired) return res.writeHead(task.life.expired, { "content-type": "application/xml" }).end()
        const bytes = await silentMovie(sizeOf(task), task.body.duration ?? 6)
        return res.writeHead(200, { "content-type": "video/mp4", "content-length": String(bytes.byteLength) }).end(
          bytes
        )
      }
      case "list": {
        if (!PURPOSES.has(request.query.get("purpose") ?? "")) return baseResp(res, 2013, "invalid params, purpose")
        return json(res, 200, { files: [], base_resp: ok })
      }
    }
  }

  const server = createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", async () => {
      const url = new URL(req.url ?? "/", "http://fake")
      const text = Buffer.concat(chunks).toString("utf8")
      let body: Record<string, any> = {}
      try {
        body = text === "" ? {} : JSON.parse(text)
      } catch {
        return baseResp(res, 2013, "invalid params, the body is not JSON")
      }
      const request: MinimaxRequest = {
        at: Date.now(),
        method: req.method ?? "GET",
        path: url.pathname,
        query: url.searchParams,
        headers: req.headers,
        body
      }
      fake.requests.push(request)
      await answer(request, res, req.socket)
    })
  })
  const listening = await listenOnLoopback(server)
  port = listening.port
  return {
    ...fake,
    url: `http://127.0.0.1:${port}`,
    close: async () => {
      for (const timer of timers) clearTimeout(timer)
      await listening.close()
    }
  }
}
