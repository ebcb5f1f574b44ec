import { randomBytes } from "node:crypto"
import { createServer, type IncomingHttpHeaders, type ServerResponse } from "node:http"
import type { Socket } from "node:net"
import { listenOnLoopback } from "../support/fakeServer.ts"
import { mp4 } from "./arkTasks.ts"
import { type Emitter, makeEmitter } from "./callbackEmitter.ts"
import { picture } from "./media.ts"
import { invalidFields, modelOfVersion, MODELS } from "./replicateModels.ts"

/**
 * A fake Replicate on loopback (docs/adapters/replicate.md, Tests): the
 * model-scoped and version creates (Bearer token; the input checked against
 * the model's schema with Replicate's 422 body; `Prefer: wait` holding the
 * answer; `Cancel-After` stopping a prediction at its deadline: `aborted`
 * before it started, `canceled` while running), `GET /predictions/{id}`, cancel, the default webhook
 * secret, `GET /account`, the account's prediction list (`GET /predictions`,
 * newest first, 100 a page with `next` and `previous` cursor links; a
 * scenario may list other metrics than its reads answer: `listedPredictTime`),
 * and outputs served from links that Replicate
 * deletes after an hour (`outputTtlMs`). Each prediction follows a scripted
 * timeline (`scenarios`, one per create) counted in reads, or in time with
 * `stepMs`; a prediction with `webhook` is posted once it completes (signed
 * with Standard Webhooks headers by callbackEmitter.ts, retried on a non-2xx,
 * duplicated on request). `faults` break the next creates or reads as
 * production does: 429 with Replicate's body, a proxy's HTML 5xx, a hang, a
 * reset after the request was read (the prediction created).
 */

export interface Scenario {
  /** Reads answered `starting`, then `processing` (1 each by default; Infinity to wait for a cancel). */
  readonly starting?: number
  readonly processing?: number
  readonly end?: "succeeded" | "failed" | "canceled" | "aborted" | "no_output"
  readonly error?: string
  /** The timeline moves one step per `stepMs` from the create, whatever is read (needed for webhooks). */
  readonly stepMs?: number
  /** `metrics.predict_time` once it ran (succeeded, or failed or cancelled after it started): 42.1 by default. */
  readonly predictTime?: number
  /** The `predict_time` the list shows instead (a record that disagrees with the prediction's own answer). */
  readonly listedPredictTime?: number
}

export type Fault =
  /** 429 with Replicate's throttle body; a `Retry-After` header only when given. */
  | { readonly kind: "rate_limited"; readonly retryAfter?: string; readonly resetsIn?: number }
  /** A proxy's HTML page with this status. */
  | { readonly kind: "html"; readonly status: number }
  /** Replicate's error body with this status (401, 402, 404, 422). */
  | { readonly kind: "error"; readonly status: number; readonly detail: string }
  /** Never answers; nothing is created. */
  | { readonly kind: "hang" }
  /** Create: the prediction is created, then the connection is dropped. */
  | { readonly kind: "reset" }

export interface ReplicateRequest {
  readonly at: number
  readonly method: string
  readonly path: string
  readonly query: URLSearchParams
  readonly headers: IncomingHttpHeaders
  readonly body: any
}

export interface FakePrediction {
  readonly id: string
  readonly model: string
  readonly version: string
  readonly input: any
  readonly webhook: string | undefined
  readonly cancelAfter: string | undefined
  readonly scenario: Scenario
  readonly createdAt: number
  reads: number
  canceled: boolean
  /** Whether it had started when it was cancelled: one cancelled while `starting` never ran. */
  canceledStarted: boolean | undefined
  /** Stopped by its `Cancel-After` deadline: `aborted` or `canceled`. */
  stopped: "aborted" | "canceled" | undefined
  completedAt: number | undefined
}

export interface FakeReplicate {
  /** The base URL a channel's `base_url` takes (`…/v1`). */
  readonly url: string
  readonly requests: Array<ReplicateRequest>
  readonly faults: { readonly create: Array<Fault>; readonly read: Array<Fault> }
  readonly scenarios: Array<Scenario>
  readonly predictions: Map<string, FakePrediction>
  /** Webhooks: how they are delivered and signed (with `secret`), and every one sent. */
  readonly webhooks: Emitter
  /** The account's default webhook signing secret (a test may rotate it: webhooks are then signed with the new one). */
  secret: string
  /** How long outputs are served after a prediction completes (Replicate: one hour). */
  outputTtlMs: number
  readonly close: () => Promise<void>
}

const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) =>
  res.writeHead(status, { "content-type": "application/json", ...headers }).end(JSON.stringify(body))

const problem = (res: ServerResponse, status: number, detail: string, title = "Error") =>
  json(res, status, { type: "https://replicate.com/docs/reference/http", title, status, detail })

/** `Cancel-After`'s duration (`90s`, `5m`, `1h30m`) in ms; undefined when absent or not one. */
export const durationMs = (text: string | undefined) => {
  const parts = text === undefined ? null : /^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$/.exec(text.trim())
  if (!parts || text!.trim() === "") return undefined
  return ((Number(parts[1] ?? 0) * 60 + Number(parts[2] ?? 0)) * 60 + Number(parts[3] ?? 0)) * 1000
}

const timelineStatus = (p: FakePrediction) => {
  const { starting = 1, processing = 1, end = "succeeded", stepMs } = p.scenario
  const n = stepMs === undefined ? p.reads : Math.floor((Date.now() - p.createdAt) / stepMs) + 1
  if (n <= starting) return end === "aborted" && n === starting ? "aborted" : "starting"
  if (end === "aborted") return "aborted"
  if (n <= starting + processing) return "processing"
  return end === "no_output" ? "succeeded" : end
}

/**
 * The status now. Past its `Cancel-After` deadline a prediction that had not
 * started is `aborted` (never billed), one still running `canceled`; the
 * status it had when the deadline passed sticks.
 */
const statusOf = (p: FakePrediction) => {
  if (p.canceled) return "canceled"
  if (p.stopped !== undefined) return p.stopped
  const status = timelineStatus(p)
  const deadline = durationMs(p.cancelAfter)
  if (deadline !== undefined && !ENDED.has(status) && Date.now() >= p.createdAt + deadline) {
    p.stopped = status === "starting" ? "aborted" : "canceled"
    return p.stopped
  }
  return status
}

/** A model's logs: a tqdm progress bar that advances with each read while it processes. */
const logsOf = (p: FakePrediction, status: string) => {
  if (status === "starting" || status === "aborted") return ""
  const { starting = 1, processing = 1 } = p.scenario
  const steps = 50
  const done = status === "processing" ? Math.min(Math.max(p.reads - starting, 1), processing) : processing
  const current = Math.round((done / (processing + 1)) * steps)
  const bar = (n: number) =>
    `${Math.floor((n / steps) * 100)}%|${"█".repeat(Math.floor(n / 5))}| ${n}/${steps} [00:01<00:02]`
  return `Using seed: 1234\n${Array.from({ length: current }, (_, i) => bar(i + 1)).join("\n")}\n`
}

const ENDED = new Set(["succeeded", "failed", "canceled", "aborted"])

export const startFakeReplicate = async (tokens: ReadonlyArray<string>): Promise<FakeReplicate> => {
  const requests: Array<ReplicateRequest> = []
  const faults = { create: [] as Array<Fault>, read: [] as Array<Fault> }
  const scenarios: Array<Scenario> = []
  const predictions = new Map<string, FakePrediction>()
  const webhooks = makeEmitter()
  const secret = `whsec_${randomBytes(24).toString("base64")}`
  webhooks.options.secret = secret
  let origin = ""

  const objectOf = (p: FakePrediction, listed = false) => {
    const status = statusOf(p)
    const started = status === "canceled" && p.canceled
      ? p.canceledStarted === true
      : status !== "starting" && status !== "aborted"
    const predictTime = listed
      ? p.scenario.listedPredictTime ?? p.scenario.predictTime ?? 42.1
      : p.scenario.predictTime ?? 42.1
    if (ENDED.has(status)) p.completedAt ??= Date.now()
    const ext = MODELS[p.model]!.kind === "video" ? "mp4" : "png"
    const output = status === "succeeded" && p.scenario.end !== "no_output"
      ? `${origin}/delivery/${p.id}/output.${ext}`
      : null
    return {
      id: p.id,
      model: p.model,
      version: p.version,
      input: p.input,
      logs: logsOf(p, status),
      output: MODELS[p.model]!.kind === "image" && output !== null ? [output] : output,
      data_removed: false,
      error: status === "failed" ? (p.scenario.error ?? "Prediction failed for an unknown reason") : null,
      status,
      source: "api",
      created_at: new Date(p.createdAt).toISOString(),
      started_at: started ? new Date(p.createdAt + 1).toISOString() : null,
      completed_at: p.completedAt === undefined ? null : new Date(p.completedAt).toISOString(),
      urls: {
        cancel: `${origin}/v1/predictions/${p.id}/cancel`,
        get: `${origin}/v1/predictions/${p.id}`,
        web: `https://replicate.com/p/${p.id}`
      },
      // Replicate reports the time a prediction ran once it ended, whatever its end; one that never started ran none.
      metrics: ENDED.has(status) && started ? { predict_time: predictTime, total_time: predictTime + 1.4 } : {}
    }
  }

  /** `GET /v1/predictions`: newest first, 100 a page; `cursor` is the page's offset, as opaque to a client. */
  const list = (res: ServerResponse, query: URLSearchParams) => {
    const all = [...predictions.values()].reverse()
    const offset = Number(Buffer.from(query.get("cursor") ?? "MA==", "base64url").toString()) || 0
    const page = all.slice(offset, offset + 100)
    const link = (at: number) => `${origin}/v1/predictions?cursor=${Buffer.from(String(at)).toString("base64url")}`
    json(res, 200, {
      next: offset + 100 < all.length ? link(offset + 100) : null,
      previous: offset > 0 ? link(Math.max(0, offset - 100)) : null,
      results: page.map((p) => objectOf(p, true))
    })
  }

  const answerFault = (res: ServerResponse, fault: Exclude<Fault, { kind: "hang" | "reset" }>) => {
    if (fault.kind === "html") {
      return res.writeHead(fault.status, { "content-type": "text/html" }).end(
        `<html><head><title>${fault.status}</title></head><body>cloudflare</body></html>`
      )
    }
    if (fault.kind === "error") return problem(res, fault.status, fault.detail)
    return json(res, 429, {
      title: "Request was throttled",
      detail: `Request was throttled. Your rate limit resets in ~${fault.resetsIn ?? 30}s.`,
      status: 429
    }, fault.retryAfter === undefined ? {} : { "retry-after": fault.retryAfter })
  }

  const create = (req: ReplicateRequest, res: ServerResponse, socket: Socket, scoped: string | undefined) => {
    const fault = faults.create.shift()
    if (fault?.kind === "hang") return
    if (fault !== undefined && fault.kind !== "reset") return answerFault(res, fault)
    const version = scoped === undefined ? String(req.body?.version ?? "") : "hidden"
    const model = scoped ?? modelOfVersion(version.split(":").at(-1)!)
    if (model === undefined || MODELS[model] === undefined) {
      return problem(res, 404, scoped === undefined ? "The specified version does not exist" : "Model not found")
    }
    const invalid = invalidFields(MODELS[model], req.body?.input)
    if (invalid.length > 0) {
      return json(res, 422, {
        title: "Input validation failed",
        detail: invalid.map((f) => `- ${f.field}: ${f.description}`).join("\n"),
        status: 422,
        invalid_fields: invalid
      })
    }
    const webhook = req.body.webhook
    const filter = req.body.webhook_events_filter
    if (webhook !== undefined && (typeof webhook !== "string" || !/^https?:\/\//.test(webhook))) {
      return problem(res, 422, "webhook must be a valid URL")
    }
    const p: FakePrediction = {
      id: randomBytes(13).toString("base64url").toLowerCase().replace(/[^a-z0-9]/g, "x").slice(0, 26),
      model,
      version,
      input: req.body.input,
      webhook,
      cancelAfter: req.headers["cancel-after"] as string | undefined,
      scenario: scenarios.shift() ?? {},
      createdAt: Date.now(),
      reads: 0,
      canceled: false,
      canceledStarted: undefined,
      stopped: undefined,
      completedAt: undefined
    }
    predictions.set(p.id, p)
    const { stepMs, starting = 1, processing = 1 } = p.scenario
    // Only the `completed` event is asked for; Replicate always sends it.
    if (webhook !== undefined && stepMs !== undefined && (filter === undefined || filter.includes("completed"))) {
      webhooks.schedule(webhook, [(starting + processing) * stepMs + 5], () => objectOf(p))
    }
    if (fault?.kind === "reset") return socket.destroy()
    // `Prefer: wait[=n]` holds the answer until the prediction ends or n seconds (at most 60) pass.
    const wait = /^wait(?:=(\d+))?$/.exec(String(req.headers.prefer ?? "").trim())
    if (wait === null) return json(res, 201, objectOf(p))
    const until = Date.now() + Math.min(Number(wait[1] ?? 60), 60) * 1000
    const answer = () => {
      if (ENDED.has(statusOf(p)) || Date.now() >= until) return json(res, 201, objectOf(p))
      setTimeout(answer, 10)
    }
    answer()
  }

  const output = async (res: ServerResponse, path: string) => {
    const [, , id, file] = path.split("/")
    const p = predictions.get(id ?? "")
    if (p === undefined || p.completedAt === undefined || Date.now() > p.completedAt + fake.outputTtlMs) {
      return res.writeHead(404, { "content-type": "text/plain" }).end("Not Found")
    }
    const i = p.input
    const bytes = file?.endsWith(".png")
      ? await picture(i.aspect_ratio === "3:2" ? "96x64" : i.aspect_ratio === "2:3" ? "64x96" : "64x64")
      // Wan's videos always have sound; the others only when asked.
      : await mp4(
        i.duration ?? 5,
        i.aspect_ratio ?? "16:9",
        i.generate_audio === true || p.model.startsWith("wan-video/")
      )
    res.writeHead(200, { "content-type": file?.endsWith(".png") ? "image/png" : "video/mp4" }).end(bytes)
  }

  const route = async (req: ReplicateRequest, res: ServerResponse, socket: Socket) => {
    if (req.method === "GET" && req.path.startsWith("/delivery/")) return output(res, req.path)
    const token = String(req.headers.authorization ?? "").replace(/^Bearer /, "")
    if (!tokens.includes(token)) return problem(res, 401, "Invalid token.", "Unauthenticated")
    const scoped = /^\/v1\/models\/([\w.-]+\/[\w.-]+)\/predictions$/.exec(req.path)
    if (req.method === "POST" && (scoped || req.path === "/v1/predictions")) {
      return create(req, res, socket, scoped?.[1])
    }
    if (req.method === "GET" && req.path === "/v1/account") {
      return json(res, 200, { type: "organization", username: "operator", name: "Operator" })
    }
    if (req.method === "GET" && req.path === "/v1/webhooks/default/secret") return json(res, 200, { key: fake.secret })
    if (req.method === "GET" && req.path === "/v1/predictions") return list(res, req.query)
    const fault = faults.read.shift()
    if (fault?.kind === "hang") return
    if (fault?.kind === "reset") return socket.destroy()
    if (fault !== undefined) return answerFault(res, fault)
    const one = /^\/v1\/predictions\/([a-z0-9]+)(\/cancel)?$/.exec(req.path)
    const p = one ? predictions.get(one[1]!) : undefined
    if (p === undefined) return problem(res, 404, "Not found.", "Not found")
    if (req.method === "POST" && one![2]) {
      const status = statusOf(p)
      if (!ENDED.has(status)) {
        p.canceled = true
        p.canceledStarted = status !== "starting"
      }
      return json(res, 200, objectOf(p))
    }
    if (req.method !== "GET" || one![2]) return problem(res, 405, "Method not allowed")
    p.reads++
    json(res, 200, objectOf(p))
  }

  const server = createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      const url = new URL(req.url ?? "/", "http://fake")
      const text = Buffer.concat(chunks).toString("utf8")
      let body: unknown = null
      try {
        body = text ? JSON.parse(text) : null
      } catch {
        return problem(res, 400, "the body is not JSON")
      }
      const request = {
        at: Date.now(),
        method: req.method ?? "GET",
        path: url.pathname,
        query: url.searchParams,
        headers: req.headers,
        body
      }
      if (!url.pathname.startsWith("/delivery/")) requests.push(request)
      route(request, res, req.socket).catch((e) => problem(res, 500, String(e)))
    })
  })
  const listening = await listenOnLoopback(server)
  origin = `http://127.0.0.1:${listening.port}`
  const fake: FakeReplicate = {
    url: `${origin}/v1`,
    requests,
    faults,
    scenarios,
    predictions,
    webhooks,
    secret,
    outputTtlMs: 60 * 60 * 1000,
    close: () => {
      webhooks.close()
      return listening.close()
    }
  }
  return fake
}
