import { createHmac, randomBytes } from "node:crypto"
import { createServer, type IncomingHttpHeaders, type ServerResponse } from "node:http"
import type { Socket } from "node:net"
import { listenOnLoopback } from "../support/fakeServer.ts"
import { mp4 } from "./arkTasks.ts"

/**
 * A fake of OpenRouter's asynchronous video API on loopback
 * (docs/adapters/openrouter.md, Tests), as the official client
 * `@openrouter/sdk` speaks it: `POST /api/v1/videos` (202 with `id`,
 * `polling_url`, `status: "pending"`), `GET /api/v1/videos/{jobId}`,
 * `GET /api/v1/videos/{jobId}/content?index=N` serving a real MP4 of the
 * job's duration and ratio (silent unless `generate_audio`),
 * `GET /api/v1/videos/models` and `GET /api/v1/key`. Requests are checked as
 * OpenRouter checks them: the bearer key, a JSON create with a known `model`,
 * the model's own durations, ratios, resolutions and frame types, the shape
 * of `frame_images` and `input_references`, no unknown field. Refusals use
 * OpenRouter's envelope `{ "error": { "code", "message", "metadata" } }`.
 * Each job follows a `Life` the test queued (per poll, or per `stepMs` of
 * time); each route takes faults the test queued; every request is
 * recorded. A job created with `callback_url` (HTTPS, as OpenRouter requires;
 * plain HTTP only to loopback, for the tests' gateway) and a timed life gets
 * OpenRouter's webhook when it ends: `{ type: "video.generation.<status>",
 * created_at, data }`, signed `X-OpenRouter-Signature: t=…,v1=…` (HMAC-SHA256
 * of `<t>,<body>`) with the workspace secret when one is set.
 */

export type Fault =
  /** An answer with OpenRouter's error envelope (its `code` is the HTTP status). */
  | { readonly kind: "error"; readonly status: number; readonly message?: string; readonly metadata?: unknown }
  /** 429 as OpenRouter sends it, `Retry-After` in seconds when given. */
  | { readonly kind: "rate_limited"; readonly retryAfter?: string }
  /** A 5xx HTML page, as Cloudflare in front of the API sends. */
  | { readonly kind: "html"; readonly status: number }
  /** Never answers. */
  | { readonly kind: "hang" }
  /** Create only: the job is created (and will finish), but the answer never comes. */
  | { readonly kind: "lost" }
  /** Reads the request, then drops the connection. */
  | { readonly kind: "reset" }

/** How one job lives. */
export interface Life {
  /** Only for the job created with this prompt; any when absent. */
  readonly prompt?: string
  /** The status each poll answers, in order, the last one repeated. */
  readonly statuses: ReadonlyArray<string>
  /** The `error` of a failed job. */
  readonly error?: string
  /** The `usage.cost` once completed (default 0.4). */
  readonly cost?: number
  /** Time-driven: the status moves on every `stepMs` from the create, whoever polls (and the webhook goes at the end). */
  readonly stepMs?: number
}

export type Signature = "valid" | "invalid" | "stale" | "none"

export interface Delivered {
  readonly at: number
  readonly url: string
  readonly body: any
  readonly headers: Record<string, string>
  readonly status: number
}

export interface OpenRouterRequest {
  readonly at: number
  readonly method: string
  readonly path: string
  readonly query: URLSearchParams
  readonly headers: IncomingHttpHeaders
  readonly body: any
}

export interface FakeJob {
  readonly id: string
  readonly createdAt: number
  readonly body: any
  readonly life: Life
  polls: number
  said: string | undefined
}

/** A model as `GET /videos/models` lists it: the fields a create is checked against. */
interface ModelEntry {
  readonly id: string
  readonly name: string
  readonly supported_durations: ReadonlyArray<number>
  readonly supported_aspect_ratios: ReadonlyArray<string>
  readonly supported_resolutions: ReadonlyArray<string>
  readonly supported_frame_images: ReadonlyArray<string>
  readonly generate_audio: boolean
  readonly seed: boolean
  /** Not in OpenRouter's entry: how many reference images the fake accepts. */
  readonly references: number
}

const veo = (id: string, name: string, frames: ReadonlyArray<string>, references: number): ModelEntry => ({
  id,
  name,
  supported_durations: [4, 6, 8],
  supported_aspect_ratios: ["16:9", "9:16"],
  supported_resolutions: ["720p", "1080p"],
  supported_frame_images: frames,
  generate_audio: true,
  seed: true,
  references
})
const kling = (id: string, name: string, resolution: string): ModelEntry => ({
  id,
  name,
  supported_durations: [3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15],
  supported_aspect_ratios: ["16:9", "9:16", "1:1"],
  supported_resolutions: [resolution],
  supported_frame_images: ["first_frame", "last_frame"],
  generate_audio: true,
  seed: false,
  references: 0
})

export const FAKE_MODELS: ReadonlyArray<ModelEntry> = [
  veo("google/veo-3.1", "Google: Veo 3.1", ["first_frame", "last_frame"], 3),
  veo("google/veo-3.1-fast", "Google: Veo 3.1 Fast", ["first_frame", "last_frame"], 0),
  veo("google/veo-3.1-lite", "Google: Veo 3.1 Lite", ["first_frame"], 0),
  kling("kwaivgi/kling-v3.0-std", "Kling: Kling v3.0 Std", "720p"),
  kling("kwaivgi/kling-v3.0-pro", "Kling: Kling v3.0 Pro", "1080p")
]

const FIELDS = new Set([
  "model",
  "prompt",
  "duration",
  "resolution",
  "aspect_ratio",
  "size",
  "generate_audio",
  "seed",
  "frame_images",
  "input_references",
  "callback_url",
  "provider",
  "session_id",
  "user",
  "trace"
])

const DEFAULT_LIFE: Life = { statuses: ["pending", "in_progress", "completed"] }

export interface FakeOpenRouter {
  /** The base URL a channel is configured with: `http://127.0.0.1:port/api/v1`. */
  readonly url: string
  readonly requests: Array<OpenRouterRequest>
  /** Faults for the next requests of each route, in order; each is used once. */
  readonly faults: {
    readonly create: Array<Fault>
    readonly poll: Array<Fault>
    readonly content: Array<Fault>
  }
  readonly lives: Array<Life>
  readonly jobs: Map<string, FakeJob>
  /** The workspace's webhooks: its signing secret (none: unsigned), how the next ones are signed, what was delivered. */
  readonly callbacks: { secret: string | undefined; signature: Signature; readonly delivered: Array<Delivered> }
  readonly close: () => Promise<void>
}

const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) =>
  res.writeHead(status, { "content-type": "application/json", ...headers }).end(JSON.stringify(body))

/** OpenRouter's error envelope: `code` repeats the HTTP status. */
const refuse = (res: ServerResponse, status: number, message: string, metadata?: unknown) =>
  json(res, status, { error: { code: status, message, ...(metadata === undefined ? {} : { metadata }) } })

const isUrl = (value: unknown) => typeof value === "string" && /^(https?:\/\/|data:)/.test(value)

/** Why OpenRouter would refuse this create, or undefined. */
const invalidCreate = (body: any): string | undefined => {
  if (typeof body !== "object" || body === null || Array.isArray(body)) return "Request body must be a JSON object"
  const unknown = Object.keys(body).find((k) => !FIELDS.has(k))
  if (unknown !== undefined) return `Unrecognized key: "${unknown}"`
  if (typeof body.model !== "string") return "model: Required"
  const model = FAKE_MODELS.find((m) => m.id === body.model)
  if (model === undefined) return `${body.model} is not a valid model ID`
  if (typeof body.prompt !== "string" || body.prompt === "") return "prompt: Required"
  if (body.duration !== undefined && !model.supported_durations.includes(body.duration)) {
    return `duration ${JSON.stringify(body.duration)} is not supported; use one of ${model.supported_durations}`
  }
  if (body.aspect_ratio !== undefined && !model.supported_aspect_ratios.includes(body.aspect_ratio)) {
    return `aspect_ratio ${JSON.stringify(body.aspect_ratio)} is not supported`
  }
  if (body.resolution !== undefined && !model.supported_resolutions.includes(body.resolution)) {
    return `resolution ${JSON.stringify(body.resolution)} is not supported`
  }
  if (body.generate_audio !== undefined && typeof body.generate_audio !== "boolean") return "generate_audio: boolean"
  if (body.generate_audio === true && !model.generate_audio) return "this model does not generate audio"
  if (body.callback_url !== undefined) {
    const url = URL.canParse(String(body.callback_url)) ? new URL(String(body.callback_url)) : undefined
    const loopback = url?.protocol === "http:" && ["127.0.0.1", "localhost", "[::1]"].includes(url.hostname)
    if (url === undefined || (url.protocol !== "https:" && !loopback)) return "callback_url must be an HTTPS URL"
  }
  if (body.seed !== undefined && (!Number.isInteger(body.seed) || !model.seed)) return "seed is not supported"
  if (body.frame_images !== undefined) {
    if (!Array.isArray(body.frame_images) || body.frame_images.length === 0) return "frame_images: non-empty array"
    const types = new Set<string>()
    for (const frame of body.frame_images) {
      if (frame?.type !== "image_url" || !isUrl(frame?.image_url?.url) || Object.keys(frame).length !== 3) {
        return "frame_images[]: { type: \"image_url\", image_url: { url }, frame_type }"
      }
      if (!model.supported_frame_images.includes(frame.frame_type)) {
        return `frame_type ${JSON.stringify(frame.frame_type)} is not supported by ${model.id}`
      }
      if (types.has(frame.frame_type)) return `duplicate frame_type ${frame.frame_type}`
      types.add(frame.frame_type)
    }
  }
  if (body.input_references !== undefined) {
    if (!Array.isArray(body.input_references) || body.input_references.length === 0) {
      return "input_references: non-empty array"
    }
    if (body.input_references.length > model.references) return `${model.id} takes at most ${model.references}`
    for (const ref of body.input_references) {
      if (ref?.type !== "image_url" || !isUrl(ref?.image_url?.url)) return "input_references[]: image_url parts"
    }
  }
  return undefined
}

export const startFakeOpenRouter = async (apiKey: string): Promise<FakeOpenRouter> => {
  const fake: Omit<FakeOpenRouter, "url" | "close"> = {
    requests: [],
    faults: { create: [], poll: [], content: [] },
    lives: [],
    jobs: new Map(),
    callbacks: { secret: undefined, signature: "valid", delivered: [] }
  }
  let origin = ""
  const timers = new Set<NodeJS.Timeout>()

  /** The status a job shows now: its life's next one per poll, or per `stepMs` since its create. */
  const advance = (job: FakeJob) => {
    const { statuses, stepMs } = job.life
    const at = stepMs === undefined ? job.polls++ : Math.floor((Date.now() - job.createdAt) / stepMs)
    job.said = statuses[Math.min(at, statuses.length - 1)]!
    return job.said
  }

  const signed = (text: string): Record<string, string> => {
    const { secret, signature } = fake.callbacks
    if (secret === undefined || signature === "none") return {}
    const t = Math.floor(Date.now() / 1000) - (signature === "stale" ? 600 : 0)
    const key = signature === "invalid" ? "a secret of another workspace" : secret
    return { "x-openrouter-signature": `t=${t},v1=${createHmac("sha256", key).update(`${t},${text}`).digest("hex")}` }
  }

  /** OpenRouter's webhook of a job that ended, to its `callback_url`. */
  const callBack = async (job: FakeJob) => {
    job.said = job.life.statuses.at(-1)!
    const body = { type: `video.generation.${job.said}`, created_at: new Date().toISOString(), data: view(job) }
    const text = JSON.stringify(body)
    const headers = {
      "content-type": "application/json",
      "x-openrouter-idempotency-key": `${job.id}:${job.said}`,
      ...signed(text)
    }
    const url = String(job.body.callback_url)
    const status = await fetch(url, { method: "POST", headers, body: text, signal: AbortSignal.timeout(5000) })
      .then(async (r) => (await r.arrayBuffer(), r.status))
      .catch(() => 0)
    fake.callbacks.delivered.push({ at: Date.now(), url, body, headers, status })
  }

  const takeLife = (prompt: string) => {
    const at = fake.lives.findIndex((life) => life.prompt === undefined || life.prompt === prompt)
    return at < 0 ? DEFAULT_LIFE : fake.lives.splice(at, 1)[0]!
  }

  const view = (job: FakeJob) => {
    const status = job.said ?? "pending"
    const done = status === "completed"
    return {
      id: job.id,
      polling_url: `${origin}/api/v1/videos/${job.id}`,
      status,
      ...(status === "pending" ? {} : { generation_id: `gen-${job.id.slice(8)}` }),
      ...(done ? { unsigned_urls: [`${origin}/api/v1/videos/${job.id}/content?index=0`] } : {}),
      ...(done ? { usage: { cost: job.life.cost ?? 0.4, is_byok: false } } : {}),
      ...(status === "failed" ? { error: job.life.error ?? "Generation failed" } : {})
    }
  }

  const answer = async (request: OpenRouterRequest, res: ServerResponse, socket: Socket) => {
    const match = /^\/api\/v1\/videos(?:\/([^/]+)(\/content)?)?$/.exec(request.path)
    // The public list of video models (the official client's listVideosModels): no key needed.
    if (request.method === "GET" && request.path === "/api/v1/videos/models") {
      return json(res, 200, {
        data: FAKE_MODELS.map(({ references: _, ...m }) => ({
          ...m,
          canonical_slug: m.id,
          created: 1_760_000_000,
          description: m.name,
          creativity: null,
          allowed_passthrough_parameters: [],
          pricing_skus: { duration_seconds: "0.10" },
          supported_sizes: null,
          upscale_factor: null
        }))
      })
    }
    if (request.headers.authorization !== `Bearer ${apiKey}`) return refuse(res, 401, "User not found.")
    if (request.method === "GET" && request.path === "/api/v1/key") {
      return json(res, 200, {
        data: {
          label: "sk-or-v1-fak...789",
          limit: null,
          limit_remaining: null,
          limit_reset: null,
          usage: 1.25,
          usage_daily: 0,
          usage_weekly: 0,
          usage_monthly: 1.25,
          byok_usage: 0,
          byok_usage_daily: 0,
          byok_usage_weekly: 0,
          byok_usage_monthly: 0,
          include_byok_in_limit: false,
          is_free_tier: false,
          is_management_key: false,
          is_provisioning_key: false,
          allowed_data_regions: [],
          creator_user_id: null,
          organization_id: null,
          workspace_id: null,
          free_model_daily_requests: { limit: 50, remaining: 50, used: 0 },
          rate_limit: { interval: "10s", note: "deprecated", requests: -1 }
        }
      })
    }
    const route = request.method === "POST" && match && !match[1]
      ? "create"
      : request.method === "GET" && match?.[1]
      ? (match[2] ? "content" : "poll")
      : undefined
    if (route === undefined) return refuse(res, 404, `Not found: ${request.method} ${request.path}`)
    const fault = fake.faults[route].shift()
    if (fault?.kind === "hang") return
    if (fault?.kind === "reset") return socket.destroy()
    if (fault?.kind === "error") return refuse(res, fault.status, fault.message ?? "Provider error", fault.metadata)
    if (fault?.kind === "html") {
      return res.writeHead(fault.status, { "content-type": "text/html" })
        .end("<html><body><h1>502 Bad gateway</h1><p>cloudflare ray 8f00fa7e</p></body></html>")
    }
    if (fault?.kind === "rate_limited") {
      return json(res, 429, { error: { code: 429, message: "Rate limit exceeded: too many requests" } }, {
        ...(fault.retryAfter === undefined ? {} : { "retry-after": fault.retryAfter })
      })
    }

    if (route === "create") {
      if (!String(request.headers["content-type"] ?? "").startsWith("application/json")) {
        return refuse(res, 400, "Content-Type must be application/json")
      }
      const why = invalidCreate(request.body)
      if (why !== undefined) return refuse(res, 400, why)
      const id = `gen-vid-${Math.floor(Date.now() / 1000)}-${randomBytes(15).toString("base64url").slice(0, 20)}`
      const life = takeLife(request.body.prompt)
      const job: FakeJob = { id, createdAt: Date.now(), body: request.body, life, polls: 0, said: undefined }
      fake.jobs.set(id, job)
      if (request.body.callback_url !== undefined && life.stepMs !== undefined) {
        const timer = setTimeout(() => {
          timers.delete(timer)
          void callBack(job)
        }, (life.statuses.length - 1) * life.stepMs)
        timers.add(timer)
      }
      if (fault?.kind === "lost") return
      return json(res, 202, { id, polling_url: `${origin}/api/v1/videos/${id}`, status: "pending" })
    }
    const job = fake.jobs.get(decodeURIComponent(match![1]!))
    if (job === undefined) return refuse(res, 404, "Video generation job not found")
    if (route === "poll") {
      advance(job)
      return json(res, 200, view(job))
    }
    const index = Number(request.query.get("index") ?? "0")
    if (!Number.isInteger(index) || index < 0) return refuse(res, 400, "index must be a non-negative integer")
    if (job.said === "expired") return refuse(res, 410, "Video content has expired")
    if (job.said !== "completed") return refuse(res, 409, "Video generation is not completed")
    if (index !== 0) return refuse(res, 404, "No video at this index")
    const bytes = await mp4(job.body.duration ?? 8, job.body.aspect_ratio ?? "16:9", job.body.generate_audio === true)
    res.writeHead(200, { "content-type": "video/mp4", "content-length": String(bytes.byteLength) }).end(bytes)
  }

  const server = createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", async () => {
      const url = new URL(req.url ?? "/", "http://fake")
      const text = Buffer.concat(chunks).toString("utf8")
      let body: unknown = undefined
      try {
        body = text === "" ? undefined : JSON.parse(text)
      } catch {
        return refuse(res, 400, "Invalid JSON body")
      }
      const request: OpenRouterRequest = {
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
  origin = `http://127.0.0.1:${listening.port}`
  return {
    ...fake,
    url: `${origin}/api/v1`,
    close: () => {
      for (const timer of timers) clearTimeout(timer)
      return listening.close()
    }
  }
}
