import { createServer, type IncomingHttpHeaders, type ServerResponse } from "node:http"
import type { Socket } from "node:net"
import { listenOnLoopback, readRequest } from "../support/fakeServer.ts"
import { movie, picture } from "./media.ts"

/**
 * A fake upstream gateway on loopback: another instance of this service as the
 * `gateway` adapter uses it (docs/api.md). `POST /v1/{kind}/tasks` with the
 * `sk-` token (JSON, or multipart for an image edit), replaying the original
 * task for a known Idempotency-Key; the batch query
 * `POST /v1/{kind}/tasks/query` with the `ak_` key, with its `missing` array;
 * the cancel `POST /v1/{kind}/tasks/{id}/cancel` with the `ak_` key (a task
 * its polls have not yet seen started is cancelled: 200 and `failed` with
 * `task_cancelled` from then on; a started or ended one 409
 * `task_not_cancellable`, an unknown one 404, as the service answers);
 * results served as the fake's own assets (`url_auth: resource_api_key`, the
 * `ak_` key required) or as signed links (`url_auth: none`, no key taken). Each
 * created task follows a `Life` the test queued, each route takes faults the
 * test queued (docs/adapters/gateway.md, Tests), every request is recorded and
 * every id's polls are logged with their times, so a test or a benchmark can
 * measure the gaps.
 */

export type Fault =
  | { readonly kind: "status"; readonly status: number; readonly body?: unknown }
  /** 429; `retryAfter` in seconds when given, none otherwise. */
  | { readonly kind: "rate_limited"; readonly retryAfter?: string }
  /** A 5xx with an HTML page, as a load balancer in front of the service sends. */
  | { readonly kind: "html"; readonly status: number }
  /** Never answers, and does nothing. */
  | { readonly kind: "hang" }
  /** Create only: the task is created (and will run), but the answer never comes. */
  | { readonly kind: "lost" }
  /** Reads the request, then drops the connection without doing anything. */
  | { readonly kind: "reset" }

/** In a life's statuses: the query lists the id under `missing` instead of returning it. */
export const MISSING = "(missing)"

/** How one created task lives. */
export interface Life {
  /** Only for the task created with this prompt (so tasks run at once each get theirs); any when absent. */
  readonly prompt?: string
  /** The status each poll answers, in order, the last one repeated; null leaves the field out; MISSING. */
  readonly statuses?: ReadonlyArray<string | null>
  /** Instead of `statuses`: `in_progress` until this long after its create (ms), `succeeded` from then on. */
  readonly readyAfterMs?: number
  /** The `error` of a failed task. */
  readonly error?: { readonly code: string; readonly message: string; readonly retryable: boolean }
  /** How its results are served (`resource_api_key` when absent). */
  readonly urlAuth?: "none" | "resource_api_key"
  /** Its result links have expired: the download answers 403 (signed) or 404 (asset). */
  readonly expired?: boolean
  /** Succeeds without any result (a filtered job). */
  readonly noOutput?: boolean
  /** The video's length its result reports (ms), when it is not the requested duration (a longer video made). */
  readonly durationMs?: number
  /**
   * The result grows by this many bytes (a video: an MP4 `free` box after
   * its last box, which players and ffprobe skip; an image: zeros after its
   * end), written in chunks as the client reads, so a fake serves a
   * gigabyte without holding it.
   */
  readonly padBytes?: number
}

export interface GatewayRequest {
  /** Milliseconds since the epoch when the request had arrived. */
  readonly at: number
  readonly method: string
  readonly path: string
  readonly headers: IncomingHttpHeaders
  /** JSON members or form fields. */
  readonly fields: Record<string, any>
  readonly files: Record<string, Uint8Array>
}

export interface UpstreamTask {
  readonly id: string
  readonly kind: "video" | "image"
  readonly idempotencyKey: string | undefined
  readonly fields: Record<string, any>
  readonly prompt: string
  readonly createdAt: number
  readonly life: Life
  polls: number
  /** The status the last poll answered (undefined before any). */
  said: string | null | undefined
  /** When the task ended upstream (ms since the epoch): its `readyAfterMs`, or the poll that first said so. */
  endedAt?: number
  /** Cancelled through the cancel route: every later poll says `failed` with `task_cancelled`. */
  cancelled?: boolean
}

export interface FakeGateway {
  /** The base URL a `gateway` channel is configured with: `http://127.0.0.1:port`. */
  readonly url: string
  readonly requests: Array<GatewayRequest>
  /** Faults for the next requests of each route, in order; each is used once. */
  readonly faults: {
    readonly create: Array<Fault>
    readonly query: Array<Fault>
    readonly content: Array<Fault>
    readonly cancel: Array<Fault>
  }
  /** Lives of the next created tasks, in order; afterwards `queued`, `in_progress`, `succeeded`. */
  readonly lives: Array<Life>
  readonly tasks: Map<string, UpstreamTask>
  /** When each upstream id was asked about by a batch query (its arrival, ms since the epoch), in order. */
  readonly polls: Map<string, Array<number>>
  /** Added before every answer (the benchmark's network and upstream latency). */
  latencyMs: number
  /** Whether the fake records each request (a benchmark turns it off). */
  recording: boolean
  readonly close: () => Promise<void>
}

const DEFAULT_LIFE: Life = { statuses: ["queued", "in_progress", "succeeded"] }
const ENDED = new Set(["succeeded", "failed"])
const SIZES: Record<string, string> = { "16:9": "320x180", "9:16": "180x320" }
const object = { video: "video.task", image: "image.task" } as const

const PAD_CHUNK = new Uint8Array(1024 * 1024)

/** `size` bytes of padding, an MP4 `free` box when `box`, written as fast as the client takes them. */
const writePadding = async (res: ServerResponse, size: number, box: boolean) => {
  if (box) {
    const header = new Uint8Array(8)
    new DataView(header.buffer).setUint32(0, size)
    header.set(new TextEncoder().encode("free"), 4)
    res.write(header)
  }
  let left = size - (box ? 8 : 0)
  while (left > 0 && !res.destroyed) {
    const chunk = PAD_CHUNK.subarray(0, Math.min(left, PAD_CHUNK.length))
    left -= chunk.length
    if (!res.write(chunk)) {
      await new Promise<void>((done) => {
        const go = () => {
          res.off("drain", go).off("close", go)
          done()
        }
        res.on("drain", go).on("close", go)
      })
    }
  }
  res.end()
}

const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) =>
  res.writeHead(status, { "content-type": "application/json", ...headers }).end(JSON.stringify(body))

/** The spec's HTTP error body, with a request id of the fake's that must never reach a caller. */
const error = (res: ServerResponse, status: number, code: string, message: string, type = "invalid_request_error") =>
  json(res, status, { error: { type, code, message, request_id: `req_fakegw_${Date.now()}` } })

export const startFakeGateway = async (
  keys: { readonly modelToken: string; readonly resourceKey: string }
): Promise<FakeGateway> => {
  const byKey = new Map<string, string>()
  let base = ""
  const fake: Omit<FakeGateway, "url" | "close"> = {
    requests: [],
    faults: { create: [], query: [], content: [], cancel: [] },
    lives: [],
    tasks: new Map(),
    polls: new Map(),
    latencyMs: 0,
    recording: true
  }

  const takeLife = (prompt: string) => {
    const at = fake.lives.findIndex((life) => life.prompt === undefined || life.prompt === prompt)
    return at < 0 ? DEFAULT_LIFE : fake.lives.splice(at, 1)[0]!
  }

  /** The status this poll of the task answers, advancing its life. */
  const advance = (task: UpstreamTask, now: number) => {
    if (task.cancelled) return "failed"
    const { readyAfterMs, statuses = DEFAULT_LIFE.statuses! } = task.life
    const readyAt = readyAfterMs === undefined ? undefined : task.createdAt + readyAfterMs
    const said = readyAt !== undefined
      ? (now >= readyAt ? "succeeded" : "in_progress")
      : statuses[Math.min(task.polls, statuses.length - 1)]!
    task.polls++
    task.said = said
    if (said !== null && ENDED.has(said) && task.endedAt === undefined) task.endedAt = readyAt ?? now
    return said
  }

  const resultsOf = (task: UpstreamTask) => {
    if (task.life.noOutput) return []
    const signed = task.life.urlAuth === "none"
    const asset = `asset_${task.id.slice(5)}`
    const url = signed
      ? `${base}/signed/${asset}?expires=${Date.now() + 3600_000}&sig=fakesig`
      : `${base}/v1/assets/${asset}/content`
    const mimeType = task.kind === "video" ? "video/mp4" : "image/png"
    // A video item echoes the requested duration, as the spec has it (unless the test made it longer).
    const duration = task.kind === "video"
      ? { duration_ms: task.life.durationMs ?? (task.fields.output?.duration ?? 5) * 1000 }
      : {}
    return [{
      asset_id: asset,
      index: 0,
      url,
      mime_type: mimeType,
      url_auth: signed ? "none" : "resource_api_key",
      ...duration
    }]
  }

  /** The task object as the spec shapes it, with the status `said` (null leaves it out). */
  const taskObject = (task: UpstreamTask, said: string | null) => {
    const done = said === "succeeded"
    const now = Math.floor(Date.now() / 1000)
    return {
      id: task.id,
      object: object[task.kind],
      model: task.fields.model,
      operation: task.fields.operation ?? "generation",
      ...(said === null ? {} : { status: said }),
      progress: done || said === "failed" ? 100 : said === "in_progress" ? 40 : 0,
      result: done ? { [task.kind === "video" ? "videos" : "images"]: resultsOf(task) } : null,
      error: said === "failed"
        ? task.cancelled
          ? { code: "task_cancelled", message: "The task was cancelled.", retryable: false }
          : task.life.error ?? { code: `${task.kind}_task_failed`, message: "The task failed.", retryable: true }
        : null,
      client_reference_id: task.fields.client_reference_id ?? null,
      metadata: {},
      created_at: Math.floor(task.createdAt / 1000),
      started_at: said === "queued" ? null : Math.floor(task.createdAt / 1000),
      completed_at: done || said === "failed" ? now : null,
      updated_at: now
    }
  }

  const create = (request: GatewayRequest, kind: "video" | "image") => {
    const key = request.headers["idempotency-key"] as string | undefined
    const known = key === undefined ? undefined : byKey.get(`${kind}:${key}`)
    if (known !== undefined) return { task: fake.tasks.get(known)!, replayed: true }
    const prompt = String(request.fields.input?.prompt ?? request.fields.prompt ?? "")
    const task: UpstreamTask = {
      id: `task_${Math.random().toString(36).slice(2, 14)}${fake.tasks.size}`,
      kind,
      idempotencyKey: key,
      fields: request.fields,
      prompt,
      createdAt: Date.now(),
      life: takeLife(prompt),
      polls: 0,
      said: undefined
    }
    fake.tasks.set(task.id, task)
    if (key !== undefined) byKey.set(`${kind}:${key}`, task.id)
    return { task, replayed: false }
  }

  const content = async (res: ServerResponse, task: UpstreamTask) => {
    const [type, bytes] = task.kind === "image"
      ? ["image/png", await picture(String(task.fields.output?.size ?? task.fields.size ?? "1024x1024"))]
      : [
        "video/mp4",
        await movie(
          SIZES[String(task.fields.output?.aspect_ratio)] ?? "240x240",
          String(task.fields.output?.duration ?? 4)
        )
      ]
    const pad = task.life.padBytes ?? 0
    res.writeHead(200, { "content-type": type, "content-length": String(bytes.byteLength + pad) })
    if (pad === 0) return res.end(bytes)
    res.write(bytes)
    await writePadding(res, pad, task.kind === "video")
  }

  const answer = async (request: GatewayRequest, res: ServerResponse, socket: Socket) => {
    const auth = request.headers.authorization
    const taskRoute = /^\/v1\/(video|image)\/tasks(\/query)?$/.exec(request.path)
    const cancelRoute = /^\/v1\/(video|image)\/tasks\/([^/]+)\/cancel$/.exec(request.path)
    const assetRoute = /^\/v1\/assets\/asset_([^/]+)\/content$/.exec(request.path) ??
      /^\/signed\/asset_([^/?]+)$/.exec(request.path)
    const route = request.method === "POST" && taskRoute
      ? (taskRoute[2] ? "query" : "create")
      : request.method === "POST" && cancelRoute
      ? "cancel"
      : request.method === "GET" && assetRoute
      ? "content"
      : undefined
    // The model list (a channel check), with a model token as the service asks.
    if (route === undefined && request.method === "GET" && request.path === "/v1/models") {
      if (auth !== `Bearer ${keys.modelToken}`) {
        return error(res, 401, "invalid_api_key", "The API key is invalid.", "authentication_error")
      }
      return json(res, 200, { object: "list", data: [{ id: "provx-famS-720p", object: "model" }] })
    }
    if (route === undefined) return error(res, 404, "not_found", `No route for ${request.method} ${request.path}`)
    // The wrong kind of key is refused as the spec says: an `ak_` key on create, an `sk-` key on a query.
    const signed = request.path.startsWith("/signed/")
    const wanted = route === "create" ? keys.modelToken : signed ? undefined : keys.resourceKey
    if (wanted !== undefined && auth !== `Bearer ${wanted}`) {
      return error(res, 401, "invalid_api_key", "The API key is invalid.", "authentication_error")
    }
    if (signed && auth !== undefined) return error(res, 400, "invalid_request", "Only one auth mechanism allowed")

    // Every id a query names is logged as asked about, whatever the answer (a fault, a late one).
    if (route === "query" && Array.isArray(request.fields.task_ids)) {
      for (const id of request.fields.task_ids as Array<string>) {
        const log = fake.polls.get(id) ?? []
        log.push(request.at)
        fake.polls.set(id, log)
      }
    }
    const fault = fake.faults[route].shift()
    if (fault?.kind === "hang") return
    if (fault?.kind === "reset") return socket.destroy()
    if (fault?.kind === "status") return json(res, fault.status, fault.body ?? {})
    if (fault?.kind === "html") {
      return res.writeHead(fault.status, { "content-type": "text/html" })
        .end("<html><body><h1>502 Bad Gateway</h1><p>upstream gw-node-3 at 10.0.0.9</p></body></html>")
    }
    if (fault?.kind === "rate_limited") {
      const headers: Record<string, string> = fault.retryAfter === undefined ? {} : { "retry-after": fault.retryAfter }
      return json(res, 429, {
        error: {
          type: "rate_limit_error",
          code: "rate_limited",
          message: "Too many requests.",
          request_id: "req_fakegw_429"
        }
      }, headers)
    }

    if (route === "create") {
      const kind = taskRoute![1] as "video" | "image"
      const prompt = request.fields.input?.prompt ?? request.fields.prompt
      if (typeof prompt !== "string" || prompt === "" || typeof request.fields.model !== "string") {
        return error(res, 400, "invalid_request", "model and prompt are required")
      }
      const { replayed, task } = create(request, kind)
      if (fault?.kind === "lost") return
      const status = task.said === undefined || task.said === MISSING ? "queued" : task.said
      return json(res, replayed ? 200 : 202, taskObject(task, status), {
        location: `/v1/${kind}/tasks/${task.id}`,
        "retry-after": "5",
        ...(replayed ? { "idempotent-replayed": "true" } : {})
      })
    }
    if (route === "query") {
      const ids = request.fields.task_ids
      if (!Array.isArray(ids) || ids.length < 1 || ids.length > 100) {
        return error(res, 400, "invalid_request", "task_ids must hold 1 to 100 ids")
      }
      const now = Date.now()
      const data: Array<unknown> = []
      const missing: Array<string> = []
      for (const id of ids as Array<string>) {
        const task = fake.tasks.get(id)
        const said = task === undefined || task.kind !== taskRoute![1] ? MISSING : advance(task, now)
        if (said === MISSING) missing.push(id)
        else data.push(taskObject(task!, said))
      }
      return json(res, 200, { object: "list", data, missing })
    }
    if (route === "cancel") {
      const task = fake.tasks.get(cancelRoute![2]!)
      if (task === undefined || task.kind !== cancelRoute![1]) {
        return error(res, 404, "task_not_found", "No such task.", "not_found_error")
      }
      if (!task.cancelled && task.said !== undefined && task.said !== "queued") {
        return error(res, 409, "task_not_cancellable", "The task cannot be cancelled.", "conflict_error")
      }
      task.cancelled = true
      task.said = "failed"
      task.endedAt ??= Date.now()
      return json(res, 200, taskObject(task, "failed"))
    }
    const task = fake.tasks.get(`task_${assetRoute![1]}`)
    if (task === undefined || task.said !== "succeeded") return error(res, 404, "asset_not_found", "No such asset.")
    if (task.life.expired) {
      return signed
        ? res.writeHead(403, { "content-type": "application/xml" }).end("<Error><Code>AccessDenied</Code></Error>")
        : error(res, 404, "asset_not_found", "The asset has expired.")
    }
    await content(res, task)
  }

  const server = createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", async () => {
      const url = new URL(req.url ?? "/", "http://fake")
      try {
        const request = await readRequest(req.method ?? "GET", url.pathname, req.headers, Buffer.concat(chunks))
        if (fake.recording) fake.requests.push(request)
        if (fake.latencyMs > 0) await new Promise((r) => setTimeout(r, fake.latencyMs))
        await answer(request, res, req.socket)
      } catch (e) {
        error(res, 400, "invalid_request", `could not parse the request: ${(e as Error).message}`)
      }
    })
  })
  const listening = await listenOnLoopback(server)
  base = `http://127.0.0.1:${listening.port}`
  return Object.assign(fake, {
    url: base,
    close: listening.close
  })
}
