import { createServer, type IncomingHttpHeaders, type ServerResponse } from "node:http"
import type { Socket } from "node:net"
import { listenOnLoopback, readRequest } from "../support/fakeServer.ts"
import { movie } from "./media.ts"

/**
 * A fake OpenAI Videos API on loopback (docs/adapters/openai-videos.md, Tests):
 * `POST /v1/videos` (JSON or multipart), `GET /v1/videos/{id}`,
 * `GET /v1/videos/{id}/content` serving a real H.264/AAC MP4 of the requested
 * size and seconds, `DELETE /v1/videos/{id}` of a finished video (OpenAI's
 * `video.deleted`; a video still running is refused, a deleted one is gone). Each created video follows a `Life` the test queued (the
 * statuses its polls answer: OpenAI's, or a relay's `done`, `unknown`, none at
 * all), and each route takes faults the test queued. Every request is recorded,
 * so tests can assert the exact upstream body.
 */

export type Fault =
  | { readonly kind: "status"; readonly status: number; readonly body?: unknown }
  /** 429 as OpenAI sends it; `retryAfter` in seconds and/or `retryAfterMs`. */
  | { readonly kind: "rate_limited"; readonly retryAfter?: string; readonly retryAfterMs?: string }
  /** A 5xx with an HTML page, as a load balancer in front of the API sends. */
  | { readonly kind: "html"; readonly status: number }
  /** Never answers, and does nothing. */
  | { readonly kind: "hang" }
  /** Create only: the video is created (and will finish), but the answer never comes. */
  | { readonly kind: "lost" }
  /** Reads the request, then drops the connection. */
  | { readonly kind: "reset" }

/** How one created video lives. */
export interface Life {
  /** Only for the video created with this prompt (so tasks run at once each get theirs); any when absent. */
  readonly prompt?: string
  /** The status each poll answers, in order, the last one repeated; null leaves the field out. */
  readonly statuses: ReadonlyArray<string | null>
  /** The `error` of a failed video. */
  readonly error?: { readonly code: string; readonly message: string }
  /** Its content has expired: `/content` answers this status. */
  readonly expired?: 404 | 410
}

export interface VideosRequest {
  /** Milliseconds since the epoch when the request had arrived. */
  readonly at: number
  readonly method: string
  readonly path: string
  /** The query string (`?variant=…`), empty when none. */
  readonly query: string
  readonly headers: IncomingHttpHeaders
  /** JSON members or form fields. */
  readonly fields: Record<string, unknown>
  /** Form files by field name. */
  readonly files: Record<string, Uint8Array>
}

interface Video {
  readonly id: string
  readonly model: string
  readonly prompt: string
  readonly seconds: string
  readonly size: string
  readonly createdAt: number
  readonly life: Life
  polls: number
  /** The status the last poll answered (undefined before any). */
  said: string | null | undefined
}

export interface FakeVideos {
  /** The base URL a channel is configured with: `http://127.0.0.1:port/v1`. */
  readonly url: string
  readonly requests: Array<VideosRequest>
  /** Faults for the next requests of each route, in order; each is used once. */
  readonly faults: {
    readonly create: Array<Fault>
    readonly poll: Array<Fault>
    readonly content: Array<Fault>
    readonly delete: Array<Fault>
  }
  /** Lives of the next created videos, in order; afterwards `queued`, `in_progress`, `completed`. */
  readonly lives: Array<Life>
  readonly videos: Map<string, Video>
  /** Every video ever created, a deleted one too (a test may look one up after its DELETE). */
  readonly created: Map<string, Video>
  /** The most videos ever in flight at once: created, and no poll has yet said they ended. */
  readonly peakInFlight: () => number
  readonly close: () => Promise<void>
}

/** Relays' success words, in any case; content is served once a poll has said one. */
const isSuccess = (status: string | null | undefined) =>
  typeof status === "string" && ["completed", "succeeded", "done"].includes(status.toLowerCase())
const SECONDS = new Set(["4", "8", "12"])
const SIZES = new Set(["720x1280", "1280x720", "1024x1792", "1792x1024"])
/** Whether a poll's status ended the video, either way. */
const hasEnded = (status: string | null | undefined) =>
  isSuccess(status) || (typeof status === "string" && ["failed", "error", "cancelled"].includes(status.toLowerCase()))
const DEFAULT_LIFE: Life = { statuses: ["queued", "in_progress", "completed"] }

const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) =>
  res.writeHead(status, { "content-type": "application/json", "x-request-id": `req_fake_${Date.now()}`, ...headers })
    .end(JSON.stringify(body))

const openAiError = (res: ServerResponse, status: number, code: string, message: string, param?: string) =>
  json(res, status, { error: { type: "invalid_request_error", code, message, param: param ?? null } })

const readVideosRequest = async (
  method: string,
  url: URL,
  headers: IncomingHttpHeaders,
  body: Buffer
): Promise<VideosRequest> => ({ ...await readRequest(method, url.pathname, headers, body), query: url.search })

/** The Video object as OpenAI shapes it, with the status this poll of its life says. */
const videoObject = (video: Video, status: string | null) => {
  const done = isSuccess(status)
  const now = Math.floor(Date.now() / 1000)
  return {
    id: video.id,
    object: "video",
    model: video.model,
    ...(status === null ? {} : { status }),
    progress: done ? 100 : status === "in_progress" ? 50 : 0,
    created_at: video.createdAt,
    completed_at: done ? now : null,
    expires_at: done ? (video.life.expired ? now - 60 : now + 3600) : null,
    prompt: video.prompt,
    remixed_from_video_id: null,
    seconds: video.seconds,
    size: video.size,
    error: status === "failed" || status === "error" ? video.life.error ?? null : null
  }
}

export const startFakeVideos = async (apiKey: string): Promise<FakeVideos> => {
  let peak = 0
  const fake: Omit<FakeVideos, "url" | "close"> = {
    requests: [],
    faults: { create: [], poll: [], content: [], delete: [] },
    lives: [],
    videos: new Map(),
    created: new Map(),
    peakInFlight: () => peak
  }

  const takeLife = (prompt: string) => {
    const at = fake.lives.findIndex((life) => life.prompt === undefined || life.prompt === prompt)
    return at < 0 ? DEFAULT_LIFE : fake.lives.splice(at, 1)[0]!
  }

  const create = (request: VideosRequest) => {
    const { fields, files } = request
    if (typeof fields.prompt !== "string" || fields.prompt === "") return "prompt is required"
    if (fields.seconds !== undefined && (typeof fields.seconds !== "string" || !SECONDS.has(fields.seconds))) {
      return `Invalid value for 'seconds': expected one of '4', '8', '12', got ${JSON.stringify(fields.seconds)}`
    }
    if (fields.size !== undefined && !SIZES.has(String(fields.size))) return `Invalid value for 'size': ${fields.size}`
    const reference = fields.input_reference as { image_url?: unknown; file_id?: unknown } | undefined
    if (reference !== undefined && typeof reference?.image_url !== "string" && typeof reference?.file_id !== "string") {
      return "input_reference must be a file upload or an object with image_url or file_id"
    }
    if (Object.keys(files).some((name) => name !== "input_reference")) return "unknown file field"
    const video: Video = {
      id: `video_${Math.random().toString(36).slice(2, 14)}`,
      model: String(fields.model ?? "sora-2"),
      prompt: fields.prompt,
      seconds: String(fields.seconds ?? "4"),
      size: String(fields.size ?? "720x1280"),
      createdAt: Math.floor(Date.now() / 1000),
      life: takeLife(fields.prompt),
      polls: 0,
      said: undefined
    }
    fake.videos.set(video.id, video)
    fake.created.set(video.id, video)
    // Only a create adds one in flight, so the peak is reached right after one.
    peak = Math.max(peak, [...fake.videos.values()].filter((v) => !hasEnded(v.said)).length)
    return video
  }

  const answer = async (request: VideosRequest, res: ServerResponse, socket: Socket) => {
    if (request.headers.authorization !== `Bearer ${apiKey}`) {
      return openAiError(res, 401, "invalid_api_key", "Incorrect API key provided.")
    }
    const match = /^\/v1\/videos(?:\/([^/]+)(\/content)?)?$/.exec(request.path)
    const route = request.method === "POST" && match && !match[1]
      ? "create"
      : request.method === "GET" && match?.[1]
      ? (match[2] ? "content" : "poll")
      : request.method === "DELETE" && match?.[1] && !match[2]
      ? "delete"
      : undefined
    // The list (a channel check): a cursor page, newest first.
    if (route === undefined && request.method === "GET" && match && !match[1]) {
      const limit = Number(new URLSearchParams(request.query).get("limit") ?? 20)
      const page = [...fake.videos.values()].reverse().slice(0, limit).map((v) => videoObject(v, v.said ?? "queued"))
      return json(res, 200, { object: "list", data: page, has_more: fake.videos.size > limit })
    }
    if (route === undefined) {
      return openAiError(res, 404, "unknown_url", `Unknown request URL: ${request.method} ${request.path}`)
    }
    const fault = fake.faults[route].shift()
    if (fault?.kind === "hang") return
    if (fault?.kind === "reset") return socket.destroy()
    if (fault?.kind === "status") return json(res, fault.status, fault.body ?? {})
    if (fault?.kind === "html") {
      return res.writeHead(fault.status, { "content-type": "text/html" })
        .end("<html><body><h1>502 Bad Gateway</h1><p>upstream relay-7 at 10.0.0.7</p></body></html>")
    }
    if (fault?.kind === "rate_limited") {
      const headers: Record<string, string> = { "x-ratelimit-remaining-requests": "0" }
      if (fault.retryAfter !== undefined) headers["retry-after"] = fault.retryAfter
      if (fault.retryAfterMs !== undefined) headers["retry-after-ms"] = fault.retryAfterMs
      return json(res, 429, {
        error: { type: "requests", code: "rate_limit_exceeded", message: "Rate limit reached.", param: null }
      }, headers)
    }

    if (route === "create") {
      const made = create(request)
      if (typeof made === "string") return openAiError(res, 400, "invalid_value", made)
      if (fault?.kind === "lost") return
      return json(res, 200, videoObject(made, "queued"))
    }
    const video = fake.videos.get(decodeURIComponent(match![1]!))
    if (video === undefined) return openAiError(res, 404, "video_not_found", "Video not found.")
    if (route === "poll") {
      video.said = video.life.statuses[Math.min(video.polls++, video.life.statuses.length - 1)]!
      return json(res, 200, videoObject(video, video.said))
    }
    if (route === "delete") {
      // OpenAI deletes a completed or failed video, its content with it.
      if (!hasEnded(video.said)) {
        return openAiError(res, 400, "invalid_request", "Only a completed or failed video can be deleted.")
      }
      fake.videos.delete(video.id)
      return json(res, 200, { id: video.id, object: "video.deleted", deleted: true })
    }
    const variant = new URLSearchParams(request.query).get("variant") ?? "video"
    if (variant !== "video") return openAiError(res, 400, "invalid_value", "variant")
    if (!isSuccess(video.said)) {
      return openAiError(res, 400, "video_not_ready", "Video is not ready yet.")
    }
    if (video.life.expired) return openAiError(res, video.life.expired, "video_expired", "Video assets have expired.")
    const bytes = await movie(video.size, video.seconds)
    res.writeHead(200, { "content-type": "video/mp4", "content-length": String(bytes.byteLength) }).end(bytes)
  }

  const server = createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", async () => {
      const url = new URL(req.url ?? "/", "http://fake")
      try {
        const request = await readVideosRequest(req.method ?? "GET", url, req.headers, Buffer.concat(chunks))
        fake.requests.push(request)
        await answer(request, res, req.socket)
      } catch (e) {
        openAiError(res, 400, "invalid_request", `could not parse the request: ${(e as Error).message}`)
      }
    })
  })
  const listening = await listenOnLoopback(server)
  return {
    ...fake,
    url: `http://127.0.0.1:${listening.port}/v1`,
    close: listening.close
  }
}
