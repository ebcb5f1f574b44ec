import { randomBytes } from "node:crypto"
import { createServer, type IncomingHttpHeaders, type ServerResponse } from "node:http"
import type { Socket } from "node:net"
import { listenOnLoopback } from "../support/fakeServer.ts"
import { contentProblem } from "./arkContent.ts"
import { type FakeTask, mp4, observation, type Scenario, sign, statusAt, taskObject } from "./arkTasks.ts"
import { changeTimes, type Emitter, makeEmitter } from "./callbackEmitter.ts"

export type { FakeTask, Scenario } from "./arkTasks.ts"

/**
 * A fake BytePlus ModelArk / Volcengine Ark on loopback, as
 * docs/adapters/ark.md (Tests) describes it: create (Bearer key, body and
 * `content[]` checked, reference URLs really fetched as Ark does), retrieve,
 * list with repeated `filter.task_ids`, delete, and results served from a
 * signed link that lapses. Each task follows a scripted timeline (`scenarios`,
 * one per create, counted in observations: GET or list); `faults` break the
 * next creates or polls the way upstreams break in production (throttling,
 * proxy pages, hangs, lost answers, dropped connections). A create with
 * `callback_url` on a time-driven timeline (`stepMs`) is called back on each
 * status change (`callbacks`, callbackEmitter.ts; Ark signs nothing).
 * Every API request is stamped when it arrives, so a test can count them in
 * any one-second window (`busiestWindow`, `between`); `throttle` answers the
 * API requests of the next moments with 429s, as an account past its rate
 * limit.
 */

export type Fault =
  /** 429 `RateLimitExceeded.EndpointRPMExceeded`, with a `Retry-After` header only when given. */
  | { readonly kind: "rate_limited"; readonly retryAfter?: string }
  /** A proxy's HTML page with this status. */
  | { readonly kind: "html"; readonly status: number }
  /** An Ark error body, e.g. 401 Unauthorized AuthenticationError. */
  | { readonly kind: "error"; readonly status: number; readonly type: string; readonly code: string }
  /** Never answers; nothing is created. */
  | { readonly kind: "hang" }
  /** Create: the task is created and its answer never comes. */
  | { readonly kind: "lost" }
  /** Create: the task is created, then the connection is dropped. */
  | { readonly kind: "reset" }
  /** 200 with a body that is no Ark answer (a captive portal, a misrouted proxy): neither JSON nor a task. */
  | { readonly kind: "garbage" }

export interface ArkRequest {
  /** When it arrived (ms since the epoch): its headers, before its body was read. */
  readonly at: number
  readonly method: string
  readonly path: string
  readonly query: Record<string, Array<string>>
  readonly headers: IncomingHttpHeaders
  readonly body: any
}

export interface FakeArk {
  /** The base URL a channel's `base_url` takes (`…/api/v3`). */
  readonly url: string
  readonly requests: Array<ArkRequest>
  readonly faults: { readonly create: Array<Fault>; readonly poll: Array<Fault> }
  readonly scenarios: Array<Scenario>
  readonly tasks: Map<string, FakeTask>
  /** Reference URLs fetched while creating, as Ark fetches them. */
  readonly fetched: Array<string>
  /** Status callbacks: how they are delivered, and every one sent. */
  readonly callbacks: Emitter
  /** While set, every API request (not result downloads) is answered with this fault, as a provider that is down. */
  outage: Exclude<Fault, { kind: "lost" | "reset" }> | undefined
  /** The origin result links name (the fake's own by default): a proxy in front of it, for instance. */
  readonly useOrigin: (origin: string) => void
  /**
   * Answers every API request of the next `ms`, whatever it asks, with 429
   * `RateLimitExceeded.EndpointRPMExceeded` (and `Retry-After` when given),
   * as Ark throttles an account past its rate; each is still a request it saw.
   */
  readonly throttle: (ms: number, retryAfter?: string) => void
  /** The API requests answered 429 by `throttle`, in order. */
  readonly throttled: Array<ArkRequest>
  /** The most API requests that arrived within any window of `ms` (sliding), and where that window starts. */
  readonly busiestWindow: (ms?: number) => { readonly count: number; readonly from: number }
  /** The API requests that arrived in `[from, to)` (ms since the epoch). */
  readonly between: (from: number, to: number) => number
  readonly close: () => Promise<void>
}

/** The largest number of the sorted times `at` within any window of `ms`, and the window's first time. */
export const busiest = (at: ReadonlyArray<number>, ms: number) => {
  let best = { count: 0, from: at[0] ?? 0 }
  for (let start = 0, end = 0; end < at.length; end++) {
    while (at[end]! - at[start]! >= ms) start++
    if (end - start + 1 > best.count) best = { count: end - start + 1, from: at[start]! }
  }
  return best
}

const arkError = (res: ServerResponse, status: number, type: string, code: string, message: string, param?: string) =>
  res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify({
    error: { code, message: `${message} Request id: 0217${Date.now()}`, ...(param ? { param } : {}), type }
  }))

export interface FakeArkOptions {
  /** Tasks queued on one key at once before creates are refused with 429. */
  readonly queueCap?: number
  /** The timeline of a task from its create body (before `scenarios`, which a test queues in create order). */
  readonly scenarioOf?: (body: any) => Scenario | undefined
}

export const startFakeArk = async (
  keys: ReadonlyArray<string>,
  { queueCap = Infinity, scenarioOf }: FakeArkOptions = {}
): Promise<FakeArk> => {
  const requests: Array<ArkRequest> = []
  const throttled: Array<ArkRequest> = []
  let throttling: { until: number; retryAfter: string | undefined } = { until: 0, retryAfter: undefined }
  const faults = { create: [] as Array<Fault>, poll: [] as Array<Fault> }
  const scenarios: Array<Scenario> = []
  const tasks = new Map<string, FakeTask>()
  const fetched: Array<string> = []
  const callbacks = makeEmitter()
  callbacks.options.signature = "none"
  let origin = ""

  const visible = (id: string, key: string) => {
    const task = tasks.get(id)
    // Keys are region-scoped: a task is invisible to any other key.
    return task !== undefined && task.key === key ? task : undefined
  }

  const create = async (req: ArkRequest, res: ServerResponse, socket: Socket, key: string) => {
    const fault = faults.create.shift()
    if (fault?.kind === "hang") return
    if (fault !== undefined && fault.kind !== "lost" && fault.kind !== "reset") return answerFault(res, fault)
    const problem = contentProblem(req.body)
    if (problem) return arkError(res, 400, "BadRequest", "InvalidParameter", problem.message, problem.param)
    // Ark downloads every reference itself; one it cannot fetch refuses the task.
    for (const item of req.body.content) {
      const url = item[item.type]?.url
      if (item.type === "text" || typeof url !== "string") continue
      const ok = await fetch(url, { signal: AbortSignal.timeout(5000) }).then((r) => r.arrayBuffer().then(() => r.ok))
        .catch(() => false)
      fetched.push(url)
      if (!ok) return arkError(res, 400, "BadRequest", "InvalidParameter", `failed to download ${item.type}`, "content")
    }
    // Counted only under a cap: a scan of every task per create would make the fake, holding 100,000 tasks in a
    // bench, the slowest part of the run and stamp the requests it kept waiting together.
    const queued = queueCap === Infinity
      ? 0
      : [...tasks.values()].filter((t) => t.key === key && statusAt(t, observation(t)) === "queued").length
    if (queued >= queueCap) {
      return arkError(res, 429, "TooManyRequests", "RateLimitExceeded", "queued task limit reached")
    }
    const id = `cgt-${new Date().toISOString().replace(/\D/g, "").slice(0, 14)}-${
      randomBytes(3).toString("hex").slice(0, 5)
    }`
    const task: FakeTask = {
      id,
      key,
      body: req.body,
      scenario: scenarioOf?.(req.body) ?? scenarios.shift() ?? {},
      createdAt: Date.now(),
      observed: 0,
      cancelled: false
    }
    tasks.set(id, task)
    const { stepMs } = task.scenario
    if (typeof req.body.callback_url === "string" && stepMs !== undefined) {
      const last = Math.min((task.scenario.queued ?? 1) + (task.scenario.running ?? 1) + 1, 1000)
      callbacks.schedule(
        req.body.callback_url,
        changeTimes(stepMs, last, (n) => statusAt(task, n)),
        () => taskObject(task, origin, false)
      )
    }
    if (fault?.kind === "lost") return
    if (fault?.kind === "reset") return socket.destroy()
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ id }))
  }

  const answerFault = (res: ServerResponse, fault: Exclude<Fault, { kind: "hang" | "lost" | "reset" }>) => {
    if (fault.kind === "garbage") {
      return res.writeHead(200, { "content-type": "text/html" }).end("<html><body>Sign in to continue</body></html>")
    }
    if (fault.kind === "html") {
      return res.writeHead(fault.status, { "content-type": "text/html" }).end(
        "<html><body><h1>502 Bad Gateway</h1></body></html>"
      )
    }
    if (fault.kind === "error") return arkError(res, fault.status, fault.type, fault.code, "refused")
    if (fault.retryAfter !== undefined) res.setHeader("retry-after", fault.retryAfter)
    return arkError(res, 429, "TooManyRequests", "RateLimitExceeded.EndpointRPMExceeded", "RPM limit exceeded")
  }

  const list = (req: ArkRequest, res: ServerResponse, key: string) => {
    const pageNum = Number(req.query["page_num"]?.[0] ?? 1)
    const pageSize = Number(req.query["page_size"]?.[0] ?? 10)
    for (const [name, n] of [["page_num", pageNum], ["page_size", pageSize]] as const) {
      if (!Number.isInteger(n) || n < 1 || n > 500) {
        return arkError(res, 400, "BadRequest", "InvalidParameter", "out of range", name)
      }
    }
    const ids = req.query["filter.task_ids"]
    const status = req.query["filter.status"]?.[0]
    const model = req.query["filter.model"]?.[0]
    const week = Date.now() - 7 * 86_400_000
    // Oldest first, reversed below: by ids, each looked up (a scan of 100,000 tasks per list would make the fake
    // the slowest part of a bench); else every task in creation order.
    const candidates = ids === undefined
      ? [...tasks.values()]
      : [...new Set(ids)].flatMap((id) => tasks.get(id) ?? []).sort((a, b) => a.createdAt - b.createdAt)
    const matching = candidates.filter((t) =>
      t.key === key && t.createdAt >= week &&
      (model === undefined || t.body.model === model) &&
      (status === undefined || statusAt(t, observation(t)) === status)
    ).reverse()
    const items = matching.slice((pageNum - 1) * pageSize, pageNum * pageSize).map((t) =>
      taskObject(t, origin, true, ids === undefined)
    )
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ total: matching.length, items }))
  }

  const remove = (res: ServerResponse, task: FakeTask) => {
    const status = statusAt(task, observation(task))
    if (status === "running" || status === "cancelled") {
      return arkError(res, 400, "BadRequest", "InvalidParameter", `a ${status} task cannot be deleted`, "id")
    }
    if (status === "queued") task.cancelled = true
    else tasks.delete(task.id)
    res.writeHead(200, { "content-type": "application/json" }).end("{}")
  }

  const result = async (res: ServerResponse, url: URL) => {
    const id = url.pathname.slice("/tos/".length, -".mp4".length)
    const expires = Number(url.searchParams.get("X-Tos-Expires"))
    const task = tasks.get(id)
    if (task === undefined || url.searchParams.get("X-Tos-Signature") !== sign(id, expires) || Date.now() > expires) {
      return res.writeHead(403, { "content-type": "application/xml" }).end(
        "<Error><Code>AccessDenied</Code><Message>Request has expired</Message></Error>"
      )
    }
    const bytes = await mp4(task.body.duration, task.body.ratio, task.body.generate_audio !== false)
    res.writeHead(200, { "content-type": "video/mp4", "content-length": bytes.length }).end(bytes)
  }

  const route = async (req: ArkRequest, res: ServerResponse, socket: Socket, url: URL) => {
    if (req.method === "GET" && req.path.startsWith("/tos/")) return result(res, url)
    if (req.at < throttling.until) {
      throttled.push(req)
      return answerFault(res, { kind: "rate_limited", retryAfter: throttling.retryAfter })
    }
    const down = fake.outage
    if (down?.kind === "hang") return
    if (down !== undefined) return answerFault(res, down)
    const key = String(req.headers.authorization ?? "").replace(/^Bearer /, "")
    if (!keys.includes(key)) return arkError(res, 401, "Unauthorized", "AuthenticationError", "the API key is invalid")
    const tasksPath = "/api/v3/contents/generations/tasks"
    if (req.method === "POST" && req.path === tasksPath) return create(req, res, socket, key)
    if (req.method !== "GET" && req.method !== "DELETE") return arkError(res, 404, "NotFound", "NotFound", "no route")
    if (req.method === "GET") {
      const fault = faults.poll.shift()
      if (fault?.kind === "hang" || fault?.kind === "lost") return
      if (fault !== undefined && fault.kind !== "reset") return answerFault(res, fault)
      if (fault?.kind === "reset") return socket.destroy()
      if (req.path === tasksPath) return list(req, res, key)
    }
    const task = req.path.startsWith(`${tasksPath}/`) ? visible(req.path.slice(tasksPath.length + 1), key) : undefined
    if (task === undefined) return arkError(res, 404, "NotFound", "NotFound.TaskId", "the task does not exist")
    if (req.method === "DELETE") return remove(res, task)
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(taskObject(task, origin, true)))
  }

  const server = createServer((req, res) => {
    const arrived = Date.now()
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      const url = new URL(req.url ?? "/", "http://fake")
      const query: Record<string, Array<string>> = {}
      for (const [k, v] of url.searchParams) (query[k] ??= []).push(v)
      const text = Buffer.concat(chunks).toString("utf8")
      let body: unknown = null
      try {
        body = text ? JSON.parse(text) : null
      } catch {
        return arkError(res, 400, "BadRequest", "InvalidParameter", "the body is not JSON")
      }
      const request = {
        at: arrived,
        method: req.method ?? "GET",
        path: url.pathname,
        query,
        headers: req.headers,
        body
      }
      if (!url.pathname.startsWith("/tos/")) requests.push(request)
      route(request, res, req.socket, url).catch((e) =>
        arkError(res, 500, "InternalServiceError", "InternalServiceError", String(e))
      )
    })
  })
  const listening = await listenOnLoopback(server)
  origin = `http://127.0.0.1:${listening.port}`
  const fake: FakeArk = {
    url: `${origin}/api/v3`,
    requests,
    faults,
    scenarios,
    tasks,
    fetched,
    callbacks,
    outage: undefined,
    useOrigin: (other) => {
      origin = other
    },
    throttle: (ms, retryAfter) => {
      throttling = { until: Date.now() + ms, retryAfter }
    },
    throttled,
    // Requests are recorded when their body has arrived, so their arrival times are sorted before counting.
    busiestWindow: (ms = 1000) => busiest(requests.map((r) => r.at).sort((a, b) => a - b), ms),
    between: (from, to) => requests.filter((r) => r.at >= from && r.at < to).length,
    close: () => {
      callbacks.close()
      return listening.close()
    }
  }
  return fake
}
