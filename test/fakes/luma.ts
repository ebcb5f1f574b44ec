import { createServer, type IncomingHttpHeaders, type ServerResponse } from "node:http"
import type { Socket } from "node:net"
import { listenOnLoopback } from "../support/fakeServer.ts"
import { movie } from "./media.ts"

/**
 * A fake of Luma AI's Dream Machine API on loopback (docs/adapters/luma.md,
 * Tests), as Luma's API reference and its official client (`lumaai` 1.19.1)
 * speak it: `Authorization: Bearer <key>` on every call; `POST /generations`
 * and `POST /generations/video` (JSON; `model`, `prompt`, `aspect_ratio`,
 * `resolution`, `duration`, `loop`, `keyframes`, `callback_url`, checked
 * against Luma's enums and its documented validation messages) answered 201
 * with the generation object; `GET /generations/{id}` (`state` queued →
 * dreaming → completed or failed, `assets.video`, `failure_reason`);
 * `DELETE /generations/{id}` (204); `GET /generations?limit&offset`;
 * `GET /credits`; `GET /ping`. Errors are Luma's `{"detail": "…"}`. A
 * completed video is served without the key under `/cdn/…` as a real MP4
 * of the requested resolution, ratio and seconds. With `callback_url`, the
 * generation object is POSTed there when it is dreaming, completed or
 * failed (Luma signs nothing). A test plants faults per route and lives per
 * prompt; every request is recorded.
 */

export type Fault =
  /** 429 as Luma's rate limit answers it, with `Retry-After` (seconds) when given. */
  | { readonly kind: "rate_limited"; readonly retryAfter?: string }
  /** Any status with Luma's error object. */
  | { readonly kind: "status"; readonly status: number; readonly detail?: string }
  /** A 5xx HTML page, as a load balancer in front of the API sends. */
  | { readonly kind: "html"; readonly status: number }
  /** Never answers, and does nothing. */
  | { readonly kind: "hang" }
  /** Create only: the generation is created (and will finish), but the answer never comes. */
  | { readonly kind: "lost" }
  /** Reads the request, then drops the connection. */
  | { readonly kind: "reset" }

/** How one generation lives: the state at each step, the last one kept. */
export interface Life {
  /** Only for the generation created with this prompt; any when absent. */
  readonly prompt?: string
  readonly states: ReadonlyArray<"queued" | "dreaming" | "completed" | "failed">
  /** Milliseconds between steps (200 by default). */
  readonly stepMs?: number
  readonly failureReason?: string
  /** The CDN no longer serves its video. */
  readonly expired?: boolean
}

export interface LumaRequest {
  readonly at: number
  readonly method: string
  readonly path: string
  readonly query: URLSearchParams
  readonly headers: IncomingHttpHeaders
  readonly body: any
}

export interface FakeGeneration {
  readonly id: string
  readonly createdAt: number
  readonly request: Record<string, any>
  readonly life: Life
  deleted: boolean
  /** The states its callbacks carried, in order, with the gateway's answer to each. */
  readonly callbacks: Array<{ readonly state: string; readonly status: number }>
}

export interface FakeLuma {
  /** The base URL a channel is configured with: `http://127.0.0.1:port/dream-machine/v1`. */
  readonly url: string
  readonly requests: Array<LumaRequest>
  readonly faults: {
    readonly create: Array<Fault>
    readonly get: Array<Fault>
    readonly delete: Array<Fault>
    readonly list: Array<Fault>
    readonly cdn: Array<Fault>
  }
  readonly lives: Array<Life>
  /** Every generation ever created, deleted ones too. */
  readonly generations: Map<string, FakeGeneration>
  /** The state a generation is in now. */
  readonly stateOf: (generation: FakeGeneration) => string
  readonly close: () => Promise<void>
}

const MODELS = new Set(["ray-2", "ray-flash-2", "ray-1-6"])
const RATIOS = new Set(["1:1", "16:9", "9:16", "4:3", "3:4", "21:9", "9:21"])
const RESOLUTIONS: Record<string, number> = { "540p": 540, "720p": 720, "1080p": 1080, "4k": 2160 }
const DURATIONS = new Set(["5s", "9s"])
const FIELDS = new Set([
  "generation_type",
  "prompt",
  "aspect_ratio",
  "loop",
  "keyframes",
  "callback_url",
  "model",
  "resolution",
  "duration",
  "concepts"
])
const DEFAULT_LIFE: Life = { states: ["queued", "dreaming", "completed"] }

const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) =>
  res.writeHead(status, { "content-type": "application/json", ...headers }).end(JSON.stringify(body))
const detail = (res: ServerResponse, status: number, message: string) => json(res, status, { detail: message })

/** The frame size of a resolution at a ratio, both sides even (the short side is the resolution's lines). */
export const frameSize = (resolution: string, ratio: string) => {
  const short = RESOLUTIONS[resolution] ?? 720
  const [a, b] = ratio.split(":").map(Number) as [number, number]
  const long = 2 * Math.round((short * Math.max(a, b)) / Math.min(a, b) / 2)
  return a >= b ? `${long}x${short}` : `${short}x${long}`
}

/** Luma's validation of a keyframe: an image with a URL, or a generation with an id. */
const keyframeProblem = (name: string, frame: unknown): string | undefined => {
  if (frame === undefined || frame === null) return undefined
  const f = frame as { type?: unknown; url?: unknown; id?: unknown }
  if (f.type === "image") return typeof f.url === "string" && /^https?:\/\//.test(f.url) ? undefined : `${name}.url`
  if (f.type === "generation") return typeof f.id === "string" ? undefined : `${name}.id`
  return `${name}.type`
}

/** What Luma answers 400 to, in its documented words (its Errors page), or undefined for a valid create. */
const createProblem = (body: any): string | undefined => {
  if (typeof body !== "object" || body === null || Array.isArray(body)) return "Invalid request body"
  const unknown = Object.keys(body).find((k) => !FIELDS.has(k))
  if (unknown !== undefined) return `Unknown field: ${unknown}`
  if (body.generation_type !== undefined && body.generation_type !== "video") return "Unknown request type"
  if (typeof body.model !== "string" || !MODELS.has(body.model)) return `Invalid model: ${JSON.stringify(body.model)}`
  if (body.aspect_ratio !== undefined && !RATIOS.has(body.aspect_ratio)) return "Invalid aspect_ratio"
  if (body.resolution !== undefined && !(body.resolution in RESOLUTIONS)) return "Invalid resolution"
  if (body.duration !== undefined && !DURATIONS.has(body.duration)) return "Invalid duration"
  if (body.loop !== undefined && typeof body.loop !== "boolean") return "Invalid loop"
  if (body.callback_url !== undefined && !/^https?:\/\//.test(String(body.callback_url))) return "Invalid callback_url"
  const keyframes = body.keyframes
  if (keyframes !== undefined) {
    if (typeof keyframes !== "object" || keyframes === null) return "Invalid keyframes"
    if (Object.keys(keyframes).some((k) => k !== "frame0" && k !== "frame1")) return "Invalid keyframes"
    if (!keyframes.frame0 && !keyframes.frame1) return "No keyframes provided"
    const bad = keyframeProblem("frame0", keyframes.frame0) ?? keyframeProblem("frame1", keyframes.frame1)
    if (bad !== undefined) return `Invalid keyframes.${bad}`
    if (body.loop === true && keyframes.frame0 && keyframes.frame1) return "Loop is not supported for keyframes"
    if (body.loop === true && keyframes.frame1) return "Loop is not supported for end frame"
  }
  const imaged = keyframes?.frame0?.type === "image" || keyframes?.frame1?.type === "image"
  if (body.prompt === undefined || body.prompt === null) return imaged ? undefined : "Prompt is required"
  if (typeof body.prompt !== "string") return "Invalid prompt"
  if (body.prompt.length < 3) return "Prompt is too short, minimum length is 3 characters"
  if (body.prompt.length > 5000) return "Prompt is too long, maximum length is 5000 characters"
  return undefined
}

export const startFakeLuma = async (apiKey: string): Promise<FakeLuma> => {
  let base = ""
  const timers = new Set<NodeJS.Timeout>()
  const fake: Omit<FakeLuma, "url" | "close"> = {
    requests: [],
    faults: { create: [], get: [], delete: [], list: [], cdn: [] },
    lives: [],
    generations: new Map(),
    stateOf: (g) => {
      const step = g.life.stepMs ?? 200
      return g.life.states[Math.min(Math.floor((Date.now() - g.createdAt) / step), g.life.states.length - 1)]!
    }
  }

  const takeLife = (prompt: unknown) => {
    const at = fake.lives.findIndex((life) => life.prompt === undefined || life.prompt === prompt)
    return at < 0 ? DEFAULT_LIFE : fake.lives.splice(at, 1)[0]!
  }

  /** The generation object as Luma's API reference shapes it, in the state it is in now. */
  const objectOf = (g: FakeGeneration, state = fake.stateOf(g)) => {
    const r = g.request
    return {
      id: g.id,
      generation_type: "video",
      state,
      failure_reason: state === "failed" ? g.life.failureReason ?? "Job failed" : null,
      created_at: new Date(g.createdAt).toISOString(),
      model: r.model,
      assets: state === "completed"
        ? {
          video: `${base}/cdn/${g.id}/video.mp4`,
          image: `${base}/cdn/${g.id}/thumb.jpg`,
          progress_video: null
        }
        : null,
      request: {
        generation_type: "video",
        model: r.model,
        prompt: r.prompt ?? null,
        aspect_ratio: r.aspect_ratio ?? "16:9",
        loop: r.loop ?? false,
        keyframes: r.keyframes ?? null,
        callback_url: r.callback_url ?? null,
        resolution: r.resolution ?? "720p",
        duration: r.duration ?? "5s"
      }
    }
  }

  /** Luma's callbacks: the generation object, when it is dreaming, completed or failed; a non-200 is tried 3 times. */
  const scheduleCallbacks = (g: FakeGeneration) => {
    const url = g.request.callback_url
    if (typeof url !== "string") return
    const step = g.life.stepMs ?? 200
    g.life.states.forEach((state, i) => {
      if (state === "queued" || (i > 0 && g.life.states[i - 1] === state)) return
      const post = async (tries: number): Promise<void> => {
        if (g.deleted) return
        const status = await fetch(url, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify(objectOf(g, state)),
          signal: AbortSignal.timeout(5000)
        }).then(async (r) => (await r.arrayBuffer(), r.status)).catch(() => 0)
        g.callbacks.push({ state, status })
        if (status !== 200 && tries > 1) return post(tries - 1)
      }
      const timer = setTimeout(() => {
        timers.delete(timer)
        void post(3)
      }, i * step + 20)
      timers.add(timer)
    })
  }

  const planted = (res: ServerResponse, socket: Socket, fault: Fault | undefined): boolean => {
    if (fault === undefined || fault.kind === "lost") return false
    if (fault.kind === "hang") return true
    if (fault.kind === "reset") return (socket.destroy(), true)
    if (fault.kind === "html") {
      res.writeHead(fault.status, { "content-type": "text/html" })
        .end("<html><body><h1>502 Bad Gateway</h1><p>cloudflare edge lax-7</p></body></html>")
      return true
    }
    if (fault.kind === "rate_limited") {
      json(
        res,
        429,
        { detail: "Rate limit exceeded. Too many requests." },
        fault.retryAfter === undefined ? {} : { "retry-after": fault.retryAfter }
      )
      return true
    }
    detail(res, fault.status, fault.detail ?? "Internal server error")
    return true
  }

  const answer = async (request: LumaRequest, res: ServerResponse, socket: Socket) => {
    const cdn = /^\/cdn\/([^/]+)\/video\.mp4$/.exec(request.path)
    if (cdn && request.method === "GET") {
      if (planted(res, socket, fake.faults.cdn.shift())) return
      const g = fake.generations.get(cdn[1]!)
      if (g === undefined || g.deleted || fake.stateOf(g) !== "completed") {
        return res.writeHead(404, { "content-type": "text/plain" }).end("Not Found")
      }
      if (g.life.expired) return res.writeHead(403, { "content-type": "application/xml" }).end("<Error>Expired</Error>")
      const ratio = g.request.aspect_ratio ?? "16:9"
      const bytes = await movie(
        frameSize(g.request.resolution ?? "720p", ratio),
        String(parseInt(g.request.duration ?? "5s"))
      )
      return res.writeHead(200, { "content-type": "video/mp4", "content-length": String(bytes.byteLength) }).end(bytes)
    }
    const path = request.path.replace(/^\/dream-machine\/v1/, "")
    if (!request.path.startsWith("/dream-machine/v1/")) return detail(res, 404, "Not Found")
    if (request.headers.authorization !== `Bearer ${apiKey}`) return detail(res, 401, "Invalid API key is provided")

    if (request.method === "GET" && path === "/ping") return json(res, 200, { message: "pong" })
    if (request.method === "GET" && path === "/credits") return json(res, 200, { credit_balance: 123456 })

    if (request.method === "POST" && (path === "/generations" || path === "/generations/video")) {
      const fault = fake.faults.create.shift()
      if (planted(res, socket, fault)) return
      if (!String(request.headers["content-type"] ?? "").startsWith("application/json")) {
        return detail(res, 415, "Content-Type must be application/json")
      }
      const problem = createProblem(request.body)
      if (problem !== undefined) return detail(res, 400, problem)
      const g: FakeGeneration = {
        id: crypto.randomUUID(),
        createdAt: Date.now(),
        request: request.body,
        life: takeLife(request.body.prompt),
        deleted: false,
        callbacks: []
      }
      fake.generations.set(g.id, g)
      scheduleCallbacks(g)
      if (fault?.kind === "lost") return
      return json(res, 201, objectOf(g))
    }

    if (request.method === "GET" && path === "/generations") {
      if (planted(res, socket, fake.faults.list.shift())) return
      const limit = Number(request.query.get("limit") ?? 100)
      const offset = Number(request.query.get("offset") ?? 0)
      const all = [...fake.generations.values()].filter((g) => !g.deleted).reverse()
      const page = all.slice(offset, offset + limit)
      return json(res, 200, {
        generations: page.map((g) => objectOf(g)),
        has_more: offset + limit < all.length,
        count: page.length,
        limit,
        offset
      })
    }

    const one = /^\/generations\/([^/]+)$/.exec(path)
    if (one && (request.method === "GET" || request.method === "DELETE")) {
      const route = request.method === "GET" ? "get" : "delete"
      if (planted(res, socket, fake.faults[route].shift())) return
      const g = fake.generations.get(decodeURIComponent(one[1]!))
      if (g === undefined || g.deleted) return detail(res, 404, "Generation not found")
      if (route === "get") return json(res, 200, objectOf(g))
      g.deleted = true
      return res.writeHead(204).end()
    }
    return detail(res, 404, "Not Found")
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
        return detail(res, 400, "Invalid JSON body")
      }
      const request: LumaRequest = {
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
  base = `http://127.0.0.1:${listening.port}`
  return {
    ...fake,
    url: `${base}/dream-machine/v1`,
    close: async () => {
      for (const t of timers) clearTimeout(t)
      await listening.close()
    }
  }
}
