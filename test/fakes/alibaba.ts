import { randomUUID } from "node:crypto"
import { createServer, type IncomingHttpHeaders, type ServerResponse } from "node:http"
import type { Socket } from "node:net"
import { listenOnLoopback } from "../support/fakeServer.ts"
import { movie } from "./media.ts"

/**
 * A fake Alibaba Cloud Model Studio (DashScope) on loopback, speaking the
 * video-synthesis protocol (docs/adapters/alibaba.md, Tests):
 *
 * - `POST /api/v1/services/aigc/video-generation/video-synthesis`, checked as
 *   strictly as DashScope: `Authorization: Bearer` (401 InvalidApiKey),
 *   `X-DashScope-Async: enable` (403 AccessDenied without it, video
 *   synthesis being asynchronous only), a JSON body, a known model, and per
 *   model its fields: text-to-video `parameters.size` from the documented
 *   list, image-to-video `input.img_url` and `parameters.resolution`,
 *   `duration` from the line's values, `audio` only where the line has it,
 *   `seed`, `prompt_extend`, `watermark` typed; any other field is refused
 *   (400 InvalidParameter). Answers `{ output: { task_id, task_status:
 *   "PENDING" }, request_id }`.
 * - `GET /api/v1/tasks/{task_id}`: the task's life, one status per poll;
 *   SUCCEEDED with `video_url` (an OSS-like link signed until `Expires`)
 *   and `usage`; FAILED with `output.code`/`message`; an id it never made
 *   is UNKNOWN.
 * - `POST /api/v1/tasks/{task_id}/cancel`: a PENDING task is CANCELED;
 *   anything else 400 UnsupportedOperation.
 * - `GET /api/v1/tasks?page_no&page_size`: the account's task list.
 * - `GET /oss/{task_id}.mp4?Expires=…`: a real H.264/AAC MP4, no key; a
 *   lapsed link 403 (OSS's AccessDenied page).
 *
 * Faults are queued per route and used once each by the next request.
 */

export type Fault =
  /** DashScope's own error envelope with this status and code. */
  | { readonly kind: "error"; readonly status: number; readonly code: string; readonly message?: string }
  /** 429 Throttling.RateQuota; `retryAfter` (seconds) as a standard header when given (DashScope documents none). */
  | { readonly kind: "rate_limited"; readonly retryAfter?: string }
  /** A 5xx HTML page, as a load balancer in front of the API sends. */
  | { readonly kind: "html"; readonly status: number }
  /** Never answers, and does nothing. */
  | { readonly kind: "hang" }
  /** Create only: the task is created (and will run), but the answer never comes. */
  | { readonly kind: "lost" }
  /** Reads the request, then drops the connection. */
  | { readonly kind: "reset" }

/** How one created task lives. */
export interface Life {
  /** Only for the task created with this prompt; any when absent. */
  readonly prompt?: string
  /** `task_status` each poll answers, in order, the last one repeated. */
  readonly statuses: ReadonlyArray<"PENDING" | "RUNNING" | "SUCCEEDED" | "FAILED" | "UNKNOWN">
  /** `output.code` and `output.message` of a FAILED task. */
  readonly failure?: { readonly code: string; readonly message: string }
  /** Its link has lapsed: the result answers 403. */
  readonly expired?: boolean
}

export interface AlibabaRequest {
  readonly at: number
  readonly method: string
  readonly path: string
  readonly query: URLSearchParams
  readonly headers: IncomingHttpHeaders
  readonly body: any
}

export interface FakeTask {
  readonly id: string
  readonly model: string
  readonly body: any
  readonly size: string
  readonly seconds: number
  readonly createdAt: number
  readonly life: Life
  polls: number
  /** The status the last poll (or a cancel) left it in. */
  status: string
  cancelled: boolean
}

export interface FakeAlibaba {
  /** The `base_url` a channel is configured with: `http://127.0.0.1:port`. */
  readonly url: string
  readonly requests: Array<AlibabaRequest>
  readonly faults: {
    readonly create: Array<Fault>
    readonly poll: Array<Fault>
    readonly cancel: Array<Fault>
    readonly result: Array<Fault>
  }
  /** Lives of the next created tasks; afterwards PENDING, RUNNING, SUCCEEDED. */
  readonly lives: Array<Life>
  readonly tasks: Map<string, FakeTask>
  readonly close: () => Promise<void>
}

const DEFAULT_LIFE: Life = { statuses: ["PENDING", "RUNNING", "SUCCEEDED"] }

/** The lines DashScope documents: durations, tiers, and whether `parameters.audio` exists. */
const LINES = [
  {
    t2v: "wan2.5-t2v-preview",
    i2v: "wan2.5-i2v-preview",
    durations: [5, 10],
    tiers: ["480P", "720P", "1080P"],
    audio: true
  },
  { t2v: "wan2.6-t2v", i2v: "wan2.6-i2v", durations: [5, 10, 15], tiers: ["720P", "1080P"], audio: true },
  { t2v: "wan2.2-t2v-plus", i2v: "wan2.2-i2v-plus", durations: [5], tiers: ["480P", "1080P"], audio: false }
]

/** `parameters.size` values per tier, as the text-to-video reference lists them. */
const SIZES: Record<string, ReadonlyArray<string>> = {
  "480P": ["832*480", "480*832", "624*624"],
  "720P": ["1280*720", "720*1280", "960*960", "1088*832", "832*1088"],
  "1080P": ["1920*1080", "1080*1920", "1440*1440", "1632*1248", "1248*1632"]
}
const tierOfSize = (size: string) => Object.keys(SIZES).find((tier) => SIZES[tier]!.includes(size))

const T2V_INPUT = new Set(["prompt", "negative_prompt", "audio_url"])
const I2V_INPUT = new Set(["prompt", "negative_prompt", "img_url", "audio_url"])
const T2V_PARAMETERS = new Set(["size", "duration", "prompt_extend", "seed", "watermark", "audio"])
const I2V_PARAMETERS = new Set(["resolution", "duration", "prompt_extend", "seed", "watermark", "audio"])

const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) =>
  res.writeHead(status, { "content-type": "application/json", ...headers }).end(JSON.stringify(body))

/** DashScope's error envelope. */
const dashError = (res: ServerResponse, status: number, code: string, message: string, headers = {}) =>
  json(res, status, { request_id: randomUUID(), code, message }, headers)

const MESSAGES: Record<string, string> = {
  InvalidApiKey: "Invalid API-key provided.",
  Arrearage: "Access denied, plesase make sure your account is in good standing.",
  DataInspectionFailed: "Input or output data may contain inappropriate content.",
  InternalError: "An internal error has occured, please try again later or contact service support.",
  UnsupportedOperation: "The operation is unsupported on the referee object."
}

export const startFakeAlibaba = async (apiKey: string): Promise<FakeAlibaba> => {
  const fake: Omit<FakeAlibaba, "url" | "close"> = {
    requests: [],
    faults: { create: [], poll: [], cancel: [], result: [] },
    lives: [],
    tasks: new Map()
  }
  let url = ""

  const takeLife = (prompt: string) => {
    const at = fake.lives.findIndex((life) => life.prompt === undefined || life.prompt === prompt)
    return at < 0 ? DEFAULT_LIFE : fake.lives.splice(at, 1)[0]!
  }

  /** The create's problem, as DashScope words it, or the task it makes. */
  const create = (body: any): string | FakeTask => {
    if (typeof body !== "object" || body === null || Array.isArray(body)) return "Request body is not a JSON object."
    const known = new Set(["model", "input", "parameters"])
    const extra = Object.keys(body).find((k) => !known.has(k))
    if (extra !== undefined) return `Unknown field: ${extra}.`
    const line = LINES.find((l) => l.t2v === body.model || l.i2v === body.model)
    if (line === undefined) return "Model not exist."
    const i2v = body.model === line.i2v
    const input = body.input
    const parameters = body.parameters ?? {}
    if (typeof input !== "object" || input === null) return `Required parameter "input" missing from request.`
    if (typeof parameters !== "object" || parameters === null) return `"parameters" must be an object.`
    const inputKeys = i2v ? I2V_INPUT : T2V_INPUT
    const parameterKeys = i2v ? I2V_PARAMETERS : T2V_PARAMETERS
    const badInput = Object.keys(input).find((k) => !inputKeys.has(k))
    if (badInput !== undefined) return `input.${badInput} is not a parameter of ${body.model}.`
    const badParameter = Object.keys(parameters).find((k) => !parameterKeys.has(k))
    if (badParameter !== undefined) return `parameters.${badParameter} is not a parameter of ${body.model}.`
    if (!i2v && (typeof input.prompt !== "string" || input.prompt === "")) return "input.prompt is required."
    if (input.prompt !== undefined && typeof input.prompt !== "string") return "input.prompt must be a string."
    if (input.negative_prompt !== undefined && typeof input.negative_prompt !== "string") {
      return "input.negative_prompt must be a string."
    }
    if (i2v && (typeof input.img_url !== "string" || !/^https?:\/\//.test(input.img_url))) {
      return "input.img_url is required: a public HTTP or HTTPS URL."
    }
    let tier: string
    if (i2v) {
      tier = parameters.resolution ?? line.tiers.at(-1)!
      if (!line.tiers.includes(tier)) {
        return `parameters.resolution ${JSON.stringify(parameters.resolution)} is invalid.`
      }
    } else {
      const size = parameters.size ?? "1920*1080"
      const sized = tierOfSize(size)
      if (sized === undefined || !line.tiers.includes(sized)) {
        return `parameters.size ${JSON.stringify(size)} is invalid.`
      }
      tier = sized
    }
    const duration = parameters.duration ?? 5
    if (!Number.isInteger(duration) || !line.durations.includes(duration)) {
      return `parameters.duration ${JSON.stringify(duration)} is invalid for ${body.model}.`
    }
    if (parameters.audio !== undefined && (!line.audio || typeof parameters.audio !== "boolean")) {
      return `parameters.audio is invalid for ${body.model}.`
    }
    for (const flag of ["prompt_extend", "watermark"]) {
      if (parameters[flag] !== undefined && typeof parameters[flag] !== "boolean") {
        return `parameters.${flag} must be a boolean.`
      }
    }
    if (
      parameters.seed !== undefined &&
      (!Number.isInteger(parameters.seed) || parameters.seed < 0 || parameters.seed > 2_147_483_647)
    ) return "parameters.seed must be an integer from 0 to 2147483647."
    const size = i2v ? SIZES[tier]![0]! : (parameters.size ?? "1920*1080")
    const task: FakeTask = {
      id: randomUUID(),
      model: body.model,
      body,
      size,
      seconds: duration,
      createdAt: Date.now(),
      life: takeLife(String(input.prompt ?? "")),
      polls: 0,
      status: "PENDING",
      cancelled: false
    }
    fake.tasks.set(task.id, task)
    return task
  }

  const time = (ms: number) => new Date(ms).toISOString().replace("T", " ").replace("Z", "")

  const taskAnswer = (task: FakeTask) => {
    const output: Record<string, unknown> = {
      task_id: task.id,
      task_status: task.status,
      submit_time: time(task.createdAt)
    }
    if (task.status === "SUCCEEDED") {
      const expires = Math.floor(Date.now() / 1000) + (task.life.expired ? -60 : 86_400)
      output.video_url = `${url}/oss/${task.id}.mp4?Expires=${expires}&OSSAccessKeyId=LTAI-fake&Signature=fake`
      output.orig_prompt = task.body.input.prompt
      output.end_time = time(Date.now())
    }
    if (task.status === "FAILED") {
      output.code = task.life.failure?.code ?? "InternalError"
      output.message = task.life.failure?.message ?? MESSAGES.InternalError
    }
    return {
      request_id: randomUUID(),
      output,
      ...(task.status === "SUCCEEDED"
        ? { usage: { video_duration: task.seconds, video_ratio: task.size, video_count: 1 } }
        : {})
    }
  }

  const applyFault = (fault: Fault | undefined, res: ServerResponse, socket: Socket): boolean => {
    if (fault === undefined || fault.kind === "lost") return false
    if (fault.kind === "hang") return true
    if (fault.kind === "reset") {
      socket.destroy()
      return true
    }
    if (fault.kind === "error") {
      dashError(res, fault.status, fault.code, fault.message ?? MESSAGES[fault.code] ?? fault.code)
      return true
    }
    if (fault.kind === "html") {
      res.writeHead(fault.status, { "content-type": "text/html" })
        .end("<html><body><h1>502 Bad Gateway</h1><p>Tengine at 10.1.2.3</p></body></html>")
      return true
    }
    dashError(
      res,
      429,
      "Throttling.RateQuota",
      "Requests rate limit exceeded, please try again later.",
      fault.retryAfter === undefined ? {} : { "retry-after": fault.retryAfter }
    )
    return true
  }

  const answer = async (request: AlibabaRequest, res: ServerResponse, socket: Socket) => {
    const { method, path } = request
    const result = /^\/oss\/([0-9a-f-]+)\.mp4$/.exec(path)
    if (method === "GET" && result) {
      if (applyFault(fake.faults.result.shift(), res, socket)) return
      const task = fake.tasks.get(result[1]!)
      const expires = Number(request.query.get("Expires"))
      if (task === undefined || task.status !== "SUCCEEDED") {
        return res.writeHead(404, { "content-type": "application/xml" }).end("<Error><Code>NoSuchKey</Code></Error>")
      }
      if (!(expires * 1000 > Date.now())) {
        return res.writeHead(403, { "content-type": "application/xml" })
          .end("<Error><Code>AccessDenied</Code><Message>Request has expired.</Message></Error>")
      }
      const bytes = await movie(task.size.replace("*", "x"), String(task.seconds))
      return res.writeHead(200, { "content-type": "video/mp4", "content-length": String(bytes.byteLength) }).end(bytes)
    }
    if (request.headers.authorization !== `Bearer ${apiKey}`) {
      return dashError(res, 401, "InvalidApiKey", MESSAGES.InvalidApiKey!)
    }
    if (method === "POST" && path === "/api/v1/services/aigc/video-generation/video-synthesis") {
      const fault = fake.faults.create.shift()
      if (applyFault(fault, res, socket)) return
      if (request.headers["x-dashscope-async"] !== "enable") {
        return dashError(res, 403, "AccessDenied", "current user api does not support synchronous calls")
      }
      if (!String(request.headers["content-type"] ?? "").startsWith("application/json")) {
        return dashError(res, 400, "InvalidParameter", "Content-Type must be application/json.")
      }
      const made = create(request.body)
      if (typeof made === "string") return dashError(res, 400, "InvalidParameter", made)
      if (fault?.kind === "lost") return
      return json(res, 200, { request_id: randomUUID(), output: { task_id: made.id, task_status: "PENDING" } })
    }
    const cancel = /^\/api\/v1\/tasks\/([^/]+)\/cancel$/.exec(path)
    if (method === "POST" && cancel) {
      if (applyFault(fake.faults.cancel.shift(), res, socket)) return
      const task = fake.tasks.get(decodeURIComponent(cancel[1]!))
      if (task === undefined || task.status !== "PENDING") {
        return dashError(res, 400, "UnsupportedOperation", MESSAGES.UnsupportedOperation!)
      }
      task.status = "CANCELED"
      task.cancelled = true
      return json(res, 200, { request_id: randomUUID() })
    }
    const one = /^\/api\/v1\/tasks\/([^/]+)$/.exec(path)
    if (method === "GET" && one) {
      if (applyFault(fake.faults.poll.shift(), res, socket)) return
      const task = fake.tasks.get(decodeURIComponent(one[1]!))
      if (task === undefined) {
        return json(res, 200, { request_id: randomUUID(), output: { task_id: one[1], task_status: "UNKNOWN" } })
      }
      if (!task.cancelled) task.status = task.life.statuses[Math.min(task.polls, task.life.statuses.length - 1)]!
      task.polls++
      return json(res, 200, taskAnswer(task))
    }
    if (method === "GET" && (path === "/api/v1/tasks" || path === "/api/v1/tasks/")) {
      const pageNo = Number(request.query.get("page_no") ?? 1)
      const pageSize = Number(request.query.get("page_size") ?? 10)
      const all = [...fake.tasks.values()].reverse()
      const data = all.slice((pageNo - 1) * pageSize, pageNo * pageSize).map((t) => ({
        task_id: t.id,
        status: t.status,
        model_name: t.model,
        gmt_create: t.createdAt,
        region: "ap-southeast-1"
      }))
      return json(res, 200, {
        request_id: randomUUID(),
        data,
        total: all.length,
        total_page: Math.ceil(all.length / pageSize),
        page_no: pageNo,
        page_size: pageSize
      })
    }
    return dashError(res, 404, "NotFound", `Not found: ${method} ${path}`)
  }

  const server = createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", async () => {
      const parsed = new URL(req.url ?? "/", "http://fake")
      const text = Buffer.concat(chunks).toString("utf8")
      let body: unknown = undefined
      try {
        body = text === "" ? undefined : JSON.parse(text)
      } catch {
        return dashError(res, 400, "InvalidParameter", "The request body is not valid JSON.")
      }
      const request: AlibabaRequest = {
        at: Date.now(),
        method: req.method ?? "GET",
        path: parsed.pathname,
        query: parsed.searchParams,
        headers: req.headers,
        body
      }
      fake.requests.push(request)
      await answer(request, res, req.socket)
    })
  })
  const listening = await listenOnLoopback(server)
  url = `http://127.0.0.1:${listening.port}`
  return { ...fake, url, close: listening.close }
}
