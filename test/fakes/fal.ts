import { createHash, generateKeyPairSync, randomUUID, sign as signBytes } from "node:crypto"
import { createServer, type IncomingHttpHeaders, type ServerResponse } from "node:http"
import type { Socket } from "node:net"
import { listenOnLoopback } from "../support/fakeServer.ts"
import { makeImage } from "../support/uploads.ts"
import { mp4, sign } from "./arkTasks.ts"
import { type EndpointSchema, problemsOf, SCHEMAS } from "./falEndpoints.ts"

/**
 * A fake fal queue on loopback, as docs/adapters/fal.md (Tests) describes it:
 *
 * - `POST /{endpoint}` behind `Authorization: Key …` queues any JSON input
 *   (202 `{request_id, response_url, status_url, cancel_url, queue_position}`,
 *   the URLs under the endpoint's app, without its subpath); the input is
 *   checked against the endpoint's schema (falEndpoints.ts) only when the
 *   request runs, so a bad input fails at the result fetch with 422;
 * - `GET /{owner}/{alias}/requests/{id}/status` (202 while pending, 200
 *   once COMPLETED, with `error`/`error_type` when the run failed, and a
 *   `logs` key), `GET …/requests/{id}` (the result, or the failure), and
 *   `PUT …/requests/{id}/cancel` (202 CANCELLATION_REQUESTED, 400
 *   ALREADY_COMPLETED, 404 NOT_FOUND). A path with the endpoint's subpath
 *   is 404, as on fal; so is a request the queue does not know (404
 *   `{"detail": "Request not found"}`), after the key was checked (401 for
 *   a wrong one): the channel check relies on both;
 * - results on a CDN path whose links lapse after `resultTtlMs`;
 * - webhooks (`?fal_webhook=`) POSTed when a time-driven request completes,
 *   signed with ED25519 as fal signs them (keys at `/.well-known/jwks.json`),
 *   once, twice, never, badly signed or stale, retried on a non-2xx;
 * - the platform API's request history, `GET /v1/models/requests/by-endpoint`
 *   (`endpoint_id` repeated or comma-separated, `start`/`end` ISO 8601 with
 *   `end` exclusive, `status`, `limit` up to 100, `cursor`): each request with
 *   its `sent_at`, `started_at`, `ended_at`, `status_code` and `duration`,
 *   latest first, `{items, next_cursor, has_more}`; a scenario may list a
 *   status code other than its result's (`listedStatusCode`), as a provider's
 *   record can disagree with what it answered.
 *
 * Each request follows a scripted timeline (`scenarios`, one per submit);
 * `faults` break the next submits or queries as fal breaks in production.
 */

export type Fault =
  /** 429 `{"detail": …}`, with `Retry-After` only when given. */
  | { readonly kind: "rate_limited"; readonly retryAfter?: string }
  /** A proxy's HTML page with this status. */
  | { readonly kind: "html"; readonly status: number }
  /** Never answers; nothing is queued. */
  | { readonly kind: "hang" }
  /** Submit: queued, and the answer never comes. */
  | { readonly kind: "lost" }
  /** Submit: queued, then the connection is dropped. */
  | { readonly kind: "reset" }

export interface Scenario {
  /** Observations (status queries) answered IN_QUEUE, then IN_PROGRESS (1 each by default). */
  readonly queued?: number
  readonly running?: number
  /** How the run ends: a result, a runner failure (500 at the result fetch), a result without files. */
  readonly end?: "ok" | "runner_error" | "no_output" | "content_policy" | "bad_reference"
  /** The CDN link's lifetime (an hour by default). */
  readonly resultTtlMs?: number
  /** The timeline moves with time, one observation per `stepMs` from the submit, whatever is polled. */
  readonly stepMs?: number
  /** Webhook deliveries of a time-driven request. */
  readonly webhook?: "each" | "duplicate" | "none" | "bad_signature" | "stale" | "unsigned"
  /** The `status_code` the request history lists for it, instead of its result's. */
  readonly listedStatusCode?: number
}

export interface FalRequest {
  readonly at: number
  readonly method: string
  readonly path: string
  readonly query: Record<string, string>
  readonly headers: IncomingHttpHeaders
  readonly body: any
}

export interface FakeQueued {
  readonly id: string
  readonly endpoint: string
  readonly app: string
  readonly input: any
  readonly scenario: Scenario
  readonly createdAt: number
  readonly webhook: string | undefined
  observed: number
  cancelled: boolean
}

export interface Delivery {
  readonly body: any
  readonly headers: Record<string, string>
  readonly status: number
}

export interface FakeFal {
  readonly url: string
  readonly key: string
  readonly requests: Array<FalRequest>
  /** `poll` breaks the next status, result or cancel queries; `result` only the next result fetches. */
  readonly faults: { readonly submit: Array<Fault>; readonly poll: Array<Fault>; readonly result: Array<Fault> }
  readonly scenarios: Array<Scenario>
  readonly queued: Map<string, FakeQueued>
  readonly deliveries: Array<Delivery>
  /** How often the JWKS was read; `down` answers it 503. */
  readonly jwksReads: { count: number; down: boolean }
  readonly close: () => Promise<void>
}

const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) =>
  res.writeHead(status, { "content-type": "application/json", ...headers }).end(JSON.stringify(body))

/** The endpoint id of a submit path and the app its queue URLs live under (`owner/alias`). */
const appOf = (endpoint: string) => endpoint.split("/").slice(0, 2).join("/")

const { privateKey, publicKey } = generateKeyPairSync("ed25519")
const { privateKey: otherKey } = generateKeyPairSync("ed25519")
/** fal's JWKS: the raw public key as `x`, base64url. */
export const JWKS = {
  keys: [{ kty: "OKP", crv: "Ed25519", x: publicKey.export({ format: "jwk" }).x, kid: "fake-fal" }]
}

/** fal's signature headers of a webhook body. */
export const webhookHeaders = (
  requestId: string,
  text: string,
  { key = privateKey, ageS = 0 }: { key?: typeof privateKey; ageS?: number } = {}
) => {
  const userId = "fake-user"
  const timestamp = String(Math.floor(Date.now() / 1000) - ageS)
  const digest = createHash("sha256").update(text).digest("hex")
  const message = Buffer.from([requestId, userId, timestamp, digest].join("\n"))
  return {
    "x-fal-webhook-request-id": requestId,
    "x-fal-webhook-user-id": userId,
    "x-fal-webhook-timestamp": timestamp,
    "x-fal-webhook-signature": signBytes(null, message, key).toString("hex")
  }
}

const RATIO_SIZES: Record<string, string> = { "1:1": "1024x1024", "3:2": "1536x1024", "2:3": "1024x1536" }

export const startFakeFal = async (key: string): Promise<FakeFal> => {
  const requests: Array<FalRequest> = []
  const faults = { submit: [] as Array<Fault>, poll: [] as Array<Fault>, result: [] as Array<Fault> }
  const scenarios: Array<Scenario> = []
  const queued = new Map<string, FakeQueued>()
  const deliveries: Array<Delivery> = []
  const jwksReads = { count: 0, down: false }
  const timers = new Set<ReturnType<typeof setTimeout>>()
  let origin = ""

  const answerFault = (res: ServerResponse, fault: Extract<Fault, { kind: "rate_limited" | "html" }>) => {
    if (fault.kind === "html") {
      return res.writeHead(fault.status, { "content-type": "text/html" }).end(
        `<html><body><h1>${fault.status}</h1><p>cloudflare</p></body></html>`
      )
    }
    return json(res, 429, { detail: "Rate limit exceeded. Please try again later." }, {
      ...(fault.retryAfter !== undefined ? { "retry-after": fault.retryAfter } : {})
    })
  }

  const observation = (q: FakeQueued) =>
    q.scenario.stepMs === undefined ? q.observed : Math.floor((Date.now() - q.createdAt) / q.scenario.stepMs) + 1
  const statusAt = (q: FakeQueued, n: number) => {
    if (q.cancelled) return "COMPLETED"
    const { queued: inQueue = 1, running = 1 } = q.scenario
    // Zero observations in a phase skip it, even before the first query.
    if (inQueue > 0 && n <= inQueue) return "IN_QUEUE"
    if (running > 0 && n <= inQueue + running) return "IN_PROGRESS"
    return "COMPLETED"
  }
  const schemaOf = (q: FakeQueued): EndpointSchema => SCHEMAS[q.endpoint]!

  /** What the run produced, once COMPLETED: the status and body of the result fetch. */
  const outcome = (q: FakeQueued): { status: number; body: unknown } => {
    if (q.cancelled) return { status: 400, body: { detail: "Request was cancelled by the user" } }
    const problems = problemsOf(schemaOf(q), q.input)
    if (problems.length > 0) return { status: 422, body: { detail: problems } }
    switch (q.scenario.end) {
      case "runner_error":
        return { status: 500, body: { detail: "Internal Server Error" } }
      case "content_policy":
        return {
          status: 422,
          body: {
            detail: [{
              loc: ["body", "prompt"],
              msg: "The content could not be processed",
              type: "content_policy_violation"
            }]
          }
        }
      // The runner could not download a reference: fal's FastAPI 422, visible only here.
      case "bad_reference":
        return {
          status: 422,
          body: {
            detail: [{ loc: ["body", "image_url"], msg: "Failed to download the file", type: "file_download_error" }]
          }
        }
      case "no_output":
        return { status: 200, body: { seed: 42 } }
    }
    const expires = Date.now() + (q.scenario.resultTtlMs ?? 3_600_000)
    const link = (ext: string, i = 0) =>
      `${origin}/files/${q.id}-${i}.${ext}?expires=${expires}&sig=${sign(`${q.id}-${i}`, expires)}`
    if (schemaOf(q).output === "images") {
      const format = q.input.output_format ?? "png"
      const ext = format === "jpeg" ? "jpg" : format
      return {
        status: 200,
        body: {
          images: Array.from({ length: q.input.num_images ?? 1 }, (_, i) => ({
            url: link(ext, i),
            content_type: `image/${format}`,
            file_name: `${i}.${ext}`
          })),
          description: ""
        }
      }
    }
    return {
      status: 200,
      body: {
        video: { url: link("mp4"), content_type: "video/mp4", file_name: "output.mp4", file_size: 1234 },
        seed: 42
      }
    }
  }

  const urls = (q: FakeQueued) => {
    const base = `${origin}/${q.app}/requests/${q.id}`
    return { response_url: base, status_url: `${base}/status`, cancel_url: `${base}/cancel` }
  }

  const statusBody = (q: FakeQueued) => {
    const status = statusAt(q, observation(q))
    const failed = status === "COMPLETED" && outcome(q).status !== 200
    return {
      status,
      request_id: q.id,
      ...urls(q),
      logs: null,
      ...(status === "IN_QUEUE" ? { queue_position: 0 } : {}),
      ...(failed
        ? { error: "Request failed", error_type: outcome(q).status === 422 ? "validation_error" : "runner_error" }
        : {})
    }
  }

  const deliver = async (q: FakeQueued, signing: Scenario["webhook"]) => {
    const result = outcome(q)
    const body = result.status === 200
      ? { request_id: q.id, gateway_request_id: q.id, status: "OK", payload: result.body }
      : {
        request_id: q.id,
        gateway_request_id: q.id,
        status: "ERROR",
        error: `Invalid status code: ${result.status}`,
        payload: result.body
      }
    const text = JSON.stringify(body)
    const headers = signing === "unsigned"
      ? {}
      : webhookHeaders(
        q.id,
        text,
        signing === "bad_signature" ? { key: otherKey } : signing === "stale" ? { ageS: 600 } : {}
      )
    for (let attempt = 0; attempt < 3; attempt++) {
      const status = await fetch(q.webhook!, {
        method: "POST",
        headers: { "content-type": "application/json", ...headers },
        body: text
      }).then((r) => r.arrayBuffer().then(() => r.status)).catch(() => 0)
      deliveries.push({ body, headers, status })
      if (status >= 200 && status < 300) return
    }
  }

  const scheduleWebhook = (q: FakeQueued) => {
    const { stepMs, queued: inQueue = 1, running = 1, webhook = "each" } = q.scenario
    if (q.webhook === undefined || stepMs === undefined || webhook === "none") return
    const at = (inQueue + running) * stepMs
    const send = (delay: number) => {
      const timer = setTimeout(() => {
        timers.delete(timer)
        void deliver(q, webhook)
      }, delay)
      timers.add(timer)
    }
    send(at)
    if (webhook === "duplicate") send(at + 30)
  }

  const submit = (req: FalRequest, res: ServerResponse, socket: Socket) => {
    const endpoint = req.path.slice(1)
    if (SCHEMAS[endpoint] === undefined) return json(res, 404, { detail: `Application '${endpoint}' not found` })
    const fault = faults.submit.shift()
    if (fault?.kind === "hang") return
    if (fault?.kind === "rate_limited" || fault?.kind === "html") return answerFault(res, fault)
    const q: FakeQueued = {
      id: randomUUID(),
      endpoint,
      app: appOf(endpoint),
      input: req.body,
      scenario: scenarios.shift() ?? {},
      createdAt: Date.now(),
      webhook: req.query["fal_webhook"],
      observed: 0,
      cancelled: false
    }
    queued.set(q.id, q)
    scheduleWebhook(q)
    if (fault?.kind === "lost") return
    if (fault?.kind === "reset") return socket.destroy()
    json(res, 202, { request_id: q.id, ...urls(q), queue_position: 0 })
  }

  /** `GET /v1/models/requests/by-endpoint`: the request history, as fal's platform API answers it. */
  const history = (res: ServerResponse, url: URL) => {
    const endpoints = url.searchParams.getAll("endpoint_id").flatMap((e) => e.split(",")).filter((e) => e !== "")
    if (endpoints.length === 0 || endpoints.length > 50) {
      return json(res, 422, { detail: [{ loc: ["query", "endpoint_id"], msg: "1 to 50 endpoint ids" }] })
    }
    const limit = Number(url.searchParams.get("limit") ?? 50)
    if (!Number.isInteger(limit) || limit < 1 || limit > 100) {
      return json(res, 422, { detail: [{ loc: ["query", "limit"], msg: "between 1 and 100" }] })
    }
    const start = Date.parse(url.searchParams.get("start") ?? "") || Date.now() - 86_400_000
    const end = Date.parse(url.searchParams.get("end") ?? "") || Date.now()
    const wanted = url.searchParams.get("status")
    const items = [...queued.values()].filter((q) => endpoints.includes(q.endpoint))
      .filter((q) => q.createdAt >= start && q.createdAt < end)
      .map((q) => {
        const done = statusAt(q, observation(q)) === "COMPLETED"
        const code = done ? (q.scenario.listedStatusCode ?? outcome(q).status) : null
        return {
          request_id: q.id,
          endpoint_id: q.endpoint,
          started_at: new Date(q.createdAt + 1).toISOString(),
          sent_at: new Date(q.createdAt).toISOString(),
          ended_at: done ? new Date(q.createdAt + 2).toISOString() : null,
          status_code: code,
          duration: done ? 0.002 : null
        }
      })
      .filter((item) =>
        wanted === null ||
        (wanted === "success"
          ? item.status_code === 200
          : wanted === "user_error"
          ? item.status_code === 422
          : item.status_code !== null && item.status_code !== 200)
      )
      .reverse()
    const page = Number(Buffer.from(url.searchParams.get("cursor") ?? "MA==", "base64").toString()) || 0
    const slice = items.slice(page * limit, (page + 1) * limit)
    const more = (page + 1) * limit < items.length
    json(res, 200, {
      items: slice,
      next_cursor: more ? Buffer.from(String(page + 1)).toString("base64") : null,
      has_more: more
    })
  }

  /** `/{owner}/{alias}/requests/{id}[/status|/cancel]`, only under the request's own app. */
  const queue = (req: FalRequest, res: ServerResponse, socket: Socket) => {
    const match = /^\/([^/]+\/[^/]+)\/requests\/([^/]+)(\/status|\/cancel)?$/.exec(req.path)
    const q = match ? queued.get(match[2]!) : undefined
    if (match === null || q === undefined || q.app !== match[1]) {
      return json(res, 404, {
        detail: "Request not found",
        ...(match?.[3] === "/cancel" ? { status: "NOT_FOUND" } : {})
      })
    }
    const fault = faults.poll.shift()
    if (fault?.kind === "hang" || fault?.kind === "lost") return
    if (fault?.kind === "reset") return socket.destroy()
    if (fault !== undefined) return answerFault(res, fault)
    const what = match[3]
    if (what === "/cancel") {
      if (req.method !== "PUT") return json(res, 405, { detail: "Method Not Allowed" })
      if (statusAt(q, observation(q)) === "COMPLETED") return json(res, 400, { status: "ALREADY_COMPLETED" })
      q.cancelled = true
      return json(res, 202, { status: "CANCELLATION_REQUESTED" })
    }
    if (req.method !== "GET") return json(res, 405, { detail: "Method Not Allowed" })
    if (what === "/status") {
      q.observed++
      const body = statusBody(q)
      return json(res, body.status === "COMPLETED" ? 200 : 202, body)
    }
    if (statusAt(q, observation(q)) !== "COMPLETED") return json(res, 400, { detail: "Request is still in progress" })
    const broken = faults.result.shift()
    if (broken?.kind === "hang" || broken?.kind === "lost") return
    if (broken?.kind === "reset") return socket.destroy()
    if (broken !== undefined) return answerFault(res, broken)
    const result = outcome(q)
    json(res, result.status, result.body, { "x-fal-request-id": q.id })
  }

  const file = async (res: ServerResponse, url: URL) => {
    const match = /^\/files\/([^/]+)-(\d+)\.(mp4|png|jpg|webp)$/.exec(url.pathname)
    const q = match ? queued.get(match[1]!) : undefined
    const expires = Number(url.searchParams.get("expires"))
    if (
      match === null || q === undefined || Date.now() > expires ||
      url.searchParams.get("sig") !== sign(`${q.id}-${match[2]}`, expires)
    ) {
      return res.writeHead(404, { "content-type": "text/html" }).end("<html><body>404 Not Found</body></html>")
    }
    if (match[3] !== "mp4") {
      const format = match[3] as "png" | "jpg" | "webp"
      const bytes = await makeImage(format, RATIO_SIZES[q.input.aspect_ratio] ?? "1024x1024")
      return res.writeHead(200, { "content-type": `image/${format === "jpg" ? "jpeg" : format}` }).end(bytes)
    }
    const i = q.input
    const seconds = Number(String(i.duration ?? "5").replace(/s$/, ""))
    const ratio = i.aspect_ratio && i.aspect_ratio !== "auto" ? i.aspect_ratio : "16:9"
    const bytes = await mp4(seconds, ratio, !schemaOf(q).silent && i.generate_audio !== false)
    res.writeHead(200, { "content-type": "video/mp4", "content-length": bytes.length }).end(bytes)
  }

  const server = createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      const url = new URL(req.url ?? "/", "http://fake")
      if (url.pathname.startsWith("/files/")) return void file(res, url).catch(() => res.destroy())
      if (url.pathname === "/.well-known/jwks.json") {
        jwksReads.count++
        return jwksReads.down ? json(res, 503, { detail: "Service Unavailable" }) : json(res, 200, JWKS)
      }
      const text = Buffer.concat(chunks).toString("utf8")
      let body: unknown = null
      try {
        body = text ? JSON.parse(text) : null
      } catch {
        return json(res, 400, { detail: "Invalid JSON body" })
      }
      const request: FalRequest = {
        at: Date.now(),
        method: req.method ?? "GET",
        path: url.pathname,
        query: Object.fromEntries(url.searchParams),
        headers: req.headers,
        body
      }
      requests.push(request)
      if (req.headers.authorization !== `Key ${key}`) {
        return json(res, 401, { detail: "Authentication is required to access this resource." })
      }
      if (url.pathname === "/v1/models/requests/by-endpoint") {
        return req.method === "GET" ? history(res, url) : json(res, 405, { detail: "Method Not Allowed" })
      }
      if (url.pathname.includes("/requests/")) return queue(request, res, req.socket)
      if (req.method !== "POST") return json(res, 405, { detail: "Method Not Allowed" })
      submit(request, res, req.socket)
    })
  })
  const listening = await listenOnLoopback(server)
  origin = `http://127.0.0.1:${listening.port}`
  return {
    url: origin,
    key,
    requests,
    faults,
    scenarios,
    queued,
    deliveries,
    jwksReads,
    close: () => {
      for (const timer of timers) clearTimeout(timer)
      return listening.close()
    }
  }
}
