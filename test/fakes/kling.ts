import { createHmac, timingSafeEqual } from "node:crypto"
import { createServer, type IncomingHttpHeaders, type ServerResponse } from "node:http"
import type { Socket } from "node:net"
import { listenOnLoopback } from "../support/fakeServer.ts"
import { changeTimes, type Emitter, makeEmitter } from "./callbackEmitter.ts"
import { currentProblem, knownModel, legacyProblem } from "./klingBodies.ts"
import {
  type FakeTask,
  isTerminal,
  newTaskId,
  resultBytes,
  type Scenario,
  sign,
  statusAt,
  taskObject
} from "./klingTasks.ts"

export type { FakeTask, Scenario } from "./klingTasks.ts"

/**
 * A fake Kling on loopback, as docs/adapters/kling.md (Tests) describes it:
 * both API generations side by side.
 *
 * - legacy: `POST /v1/videos/{text2video,image2video,omni-video}` and
 *   `GET /v1/videos/{kind}/{task_id or external_task_id}` and the kind's
 *   list, behind a JWT verified as Kling does (HS256 with the secret key,
 *   `iss` = the access key, 1001 missing, 1002 bad signature or issuer,
 *   1003 `nbf` in the future, 1004 expired), on the fake's own clock
 *   (`clock.offsetMs`, to play a Kling whose clock is behind or ahead);
 * - current: `POST /{text-to-video,image-to-video,omni-video}/{model}` and
 *   `GET /tasks?task_ids=` / `?external_task_ids=` (an array), behind the
 *   API key.
 *
 * `external_task_id` is unique per account (a second create with it is
 * refused). Each task follows a scripted timeline (`scenarios`, one per create,
 * counted in observations); `slots` caps tasks in flight (1303); `faults` break
 * the next creates or polls the way Kling breaks in production
 * (docs/adapters/kling.md, Failures). A create with a callback URL on a
 * time-driven timeline (`stepMs`) is called back on each status change in its
 * generation's payload, signed as `callbacks.options` says (callbackEmitter.ts;
 * docs/adapters/kling.md, Callbacks).
 */

export type Fault =
  /** 429 code 1302, with a `Retry-After` header only when given. */
  | { readonly kind: "rate_limited"; readonly retryAfter?: string }
  /** A proxy's HTML page with this status. */
  | { readonly kind: "html"; readonly status: number }
  /** A Kling error envelope, e.g. 429 1102 (resource pack exhausted), 400 1301 (content safety). */
  | { readonly kind: "error"; readonly status: number; readonly code: number }
  /** Never answers; nothing is created. */
  | { readonly kind: "hang" }
  /** Create: the task is created and its answer never comes. */
  | { readonly kind: "lost" }
  /** Create: the task is created, then the connection is dropped. */
  | { readonly kind: "reset" }

export interface KlingRequest {
  readonly at: number
  readonly method: string
  readonly path: string
  readonly query: Record<string, string>
  readonly headers: IncomingHttpHeaders
  readonly body: any
  /** The verified JWT's payload (legacy). */
  readonly jwt?: { iss: string; exp: number; nbf: number } | undefined
}

export interface FakeKling {
  readonly url: string
  readonly requests: Array<KlingRequest>
  readonly faults: { readonly create: Array<Fault>; readonly poll: Array<Fault> }
  readonly scenarios: Array<Scenario>
  readonly tasks: Map<string, FakeTask>
  /** Reference URLs fetched while creating, as Kling fetches them. */
  readonly fetched: Array<string>
  /** The fake's clock is ours plus `offsetMs` (negative: Kling's clock is behind). */
  readonly clock: { offsetMs: number }
  /** Tasks in flight (submitted until terminal) before a create is refused with 1303. */
  readonly limits: { slots: number }
  /** Status callbacks: delivery, signature and secret, and every one sent. */
  readonly callbacks: Emitter
  readonly close: () => Promise<void>
}

export interface KlingAccount {
  readonly accessKey: string
  readonly secretKey: string
  readonly apiKey: string
}

const MESSAGES: Record<number, string> = {
  1000: "Authentication failed",
  1001: "Authorization is empty",
  1002: "Authorization is invalid",
  1003: "Authorization is not yet valid",
  1004: "Authorization has expired",
  1102: "Resource pack exhausted or expired",
  1201: "Invalid request parameters",
  1203: "Requested resource does not exist",
  1301: "Trigger the content security policy of the platform",
  1302: "The API request is too fast, please slow down",
  1303: "Concurrency or QPS exceeds the prepaid resource package limit",
  5000: "Server internal error",
  5001: "Server temporarily unavailable"
}

const requestId = () => `5a7e${Math.random().toString(16).slice(2, 10)}-req`

const klingError = (res: ServerResponse, status: number, code: number, detail?: string) =>
  res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify({
    code,
    message: detail ? `${MESSAGES[code] ?? "error"}: ${detail}` : (MESSAGES[code] ?? "error"),
    request_id: requestId()
  }))

const ok = (res: ServerResponse, data: unknown) =>
  res.writeHead(200, { "content-type": "application/json" }).end(
    JSON.stringify({ code: 0, message: "SUCCEED", request_id: requestId(), data })
  )

const fromBase64url = (text: string) => Buffer.from(text.replace(/-/g, "+").replace(/_/g, "/"), "base64")

/** Kling's checks of the legacy JWT (docs/adapters/kling.md): the code of the refusal, or the payload. */
export const verifyJwt = (
  authorization: string | undefined,
  account: KlingAccount,
  nowS: number
): { code: number } | { payload: { iss: string; exp: number; nbf: number } } => {
  if (!authorization?.startsWith("Bearer ")) return { code: 1001 }
  const parts = authorization.slice("Bearer ".length).split(".")
  if (parts.length !== 3) return { code: 1002 }
  const [header, body, signature] = parts as [string, string, string]
  const expected = createHmac("sha256", account.secretKey).update(`${header}.${body}`).digest()
  const given = fromBase64url(signature)
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return { code: 1002 }
  let payload: any
  try {
    if (JSON.parse(fromBase64url(header).toString("utf8")).alg !== "HS256") return { code: 1002 }
    payload = JSON.parse(fromBase64url(body).toString("utf8"))
  } catch {
    return { code: 1002 }
  }
  if (payload.iss !== account.accessKey) return { code: 1002 }
  if (typeof payload.nbf === "number" && payload.nbf > nowS) return { code: 1003 }
  if (typeof payload.exp !== "number" || payload.exp < nowS) return { code: 1004 }
  return { payload }
}

const LEGACY_KINDS = ["text2video", "image2video", "omni-video"]
const CURRENT_ENDPOINTS = ["text-to-video", "image-to-video", "omni-video"]

export const startFakeKling = async (account: KlingAccount): Promise<FakeKling> => {
  const requests: Array<KlingRequest> = []
  const faults = { create: [] as Array<Fault>, poll: [] as Array<Fault> }
  const scenarios: Array<Scenario> = []
  const tasks = new Map<string, FakeTask>()
  const fetched: Array<string> = []
  const clock = { offsetMs: 0 }
  const limits = { slots: Infinity }
  const callbacks = makeEmitter()
  let origin = ""

  const answerFault = (res: ServerResponse, fault: Exclude<Fault, { kind: "hang" | "lost" | "reset" }>) => {
    if (fault.kind === "html") {
      return res.writeHead(fault.status, { "content-type": "text/html" }).end(
        `<html><body><h1>${fault.status} Bad Gateway</h1><p>nginx</p></body></html>`
      )
    }
    if (fault.kind === "error") return klingError(res, fault.status, fault.code)
    if (fault.retryAfter !== undefined) res.setHeader("retry-after", fault.retryAfter)
    return klingError(res, 429, 1302)
  }

  /** Kling downloads every reference image itself; one it cannot fetch refuses the task. */
  const fetchAll = async (urls: ReadonlyArray<string>) => {
    for (const url of urls) {
      const good = await fetch(url, { signal: AbortSignal.timeout(5000) }).then((r) => r.arrayBuffer().then(() => r.ok))
        .catch(() => false)
      fetched.push(url)
      if (!good) return false
    }
    return true
  }

  const create = async (
    req: KlingRequest,
    res: ServerResponse,
    socket: Socket,
    api: "legacy" | "current",
    kind: string,
    model: string
  ) => {
    const fault = faults.create.shift()
    if (fault?.kind === "hang") return
    if (fault !== undefined && fault.kind !== "lost" && fault.kind !== "reset") return answerFault(res, fault)
    const b = req.body
    const problem = api === "legacy" ? legacyProblem(kind, b) : currentProblem(kind, b)
    if (problem) return klingError(res, 400, 1201, problem.message)
    const urls: Array<string> = api === "legacy"
      ? [b.image, b.image_tail, ...(b.image_list ?? []).map((i: any) => i.image_url)].filter(
        (u): u is string => typeof u === "string" && u.startsWith("http")
      )
      : (b.contents ?? []).map((c: any) => c.url).filter((u: unknown): u is string => typeof u === "string")
    if (!(await fetchAll(urls))) return klingError(res, 400, 1201, "failed to download the image")
    const externalId: string | undefined = api === "legacy" ? b.external_task_id : b.options?.external_task_id
    if (externalId !== undefined && [...tasks.values()].some((t) => t.externalId === externalId)) {
      return klingError(res, 400, 1201, "external_task_id already exists")
    }
    if ([...tasks.values()].filter((t) => !isTerminal(t)).length >= limits.slots) {
      return klingError(res, 429, 1303)
    }
    const task: FakeTask = {
      id: newTaskId(),
      api,
      kind,
      model,
      externalId,
      body: b,
      scenario: scenarios.shift() ?? {},
      createdAt: Date.now(),
      observed: 0
    }
    tasks.set(task.id, task)
    const callbackUrl = api === "legacy" ? b.callback_url : b.options?.callback_url
    const { processing = 1, stepMs, submitted = 1 } = task.scenario
    if (typeof callbackUrl === "string" && stepMs !== undefined) {
      callbacks.schedule(
        callbackUrl,
        changeTimes(stepMs, Math.min(submitted + processing + 1, 1000), (n) => statusAt(task, n)),
        () => taskObject(task, origin, false)
      )
    }
    if (fault?.kind === "lost") return
    if (fault?.kind === "reset") return socket.destroy()
    if (api === "legacy") {
      return ok(res, {
        task_id: task.id,
        task_status: "submitted",
        task_info: externalId === undefined ? {} : { external_task_id: externalId },
        created_at: task.createdAt,
        updated_at: task.createdAt
      })
    }
    ok(res, {
      id: task.id,
      status: "submitted",
      create_time: task.createdAt,
      update_time: task.createdAt,
      ...(externalId === undefined ? {} : { external_id: externalId })
    })
  }

  /** Faults of a poll; true when the request was answered (or left hanging) by one. */
  const pollFault = (res: ServerResponse, socket: Socket) => {
    const fault = faults.poll.shift()
    if (fault === undefined) return false
    if (fault.kind === "reset") socket.destroy()
    else if (fault.kind !== "hang" && fault.kind !== "lost") answerFault(res, fault)
    return true
  }

  const legacy = async (req: KlingRequest, res: ServerResponse, socket: Socket) => {
    const verified = verifyJwt(req.headers.authorization, account, Math.floor((Date.now() + clock.offsetMs) / 1000))
    if ("code" in verified) return klingError(res, 401, verified.code)
    ;(req as { jwt?: unknown }).jwt = verified.payload
    const [, , , kind, id, ...rest] = req.path.split("/")
    if (!LEGACY_KINDS.includes(kind ?? "") || rest.length > 0) return klingError(res, 404, 1203)
    if (req.method === "POST" && id === undefined) {
      return create(req, res, socket, "legacy", kind!, req.body?.model_name)
    }
    if (req.method !== "GET") return klingError(res, 404, 1203)
    if (pollFault(res, socket)) return
    const ofKind = [...tasks.values()].filter((t) => t.api === "legacy" && t.kind === kind)
    if (id === undefined) {
      const pageNum = Number(req.query["pageNum"] ?? 1)
      const pageSize = Number(req.query["pageSize"] ?? 30)
      if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > 500) return klingError(res, 400, 1201, "pageSize")
      const page = ofKind.reverse().slice((pageNum - 1) * pageSize, pageNum * pageSize)
      return ok(res, page.map((t) => taskObject(t, origin, false)))
    }
    // The single query takes Kling's task id or the caller's external_task_id.
    const task = ofKind.find((t) => t.id === id) ?? ofKind.find((t) => t.externalId === id)
    if (task === undefined) return klingError(res, 404, 1203, "task not found")
    ok(res, taskObject(task, origin, task.id === id))
  }

  const current = async (req: KlingRequest, res: ServerResponse, socket: Socket) => {
    if (req.headers.authorization !== `Bearer ${account.apiKey}`) {
      return klingError(res, 401, req.headers.authorization ? 1002 : 1001)
    }
    const [, endpoint, model, ...rest] = req.path.split("/")
    if (req.method === "GET" && endpoint === "tasks" && model === undefined) {
      if (pollFault(res, socket)) return
      const ids = req.query["task_ids"]?.split(",")
      const external = req.query["external_task_ids"]?.split(",")
      if (ids === undefined && external === undefined) return klingError(res, 400, 1201, "task_ids is required")
      const found = [...tasks.values()].filter((t) =>
        t.api === "current" && (ids?.includes(t.id) || (t.externalId !== undefined && external?.includes(t.externalId)))
      )
      return ok(res, found.map((t) => taskObject(t, origin, ids !== undefined)))
    }
    if (req.method !== "POST" || !CURRENT_ENDPOINTS.includes(endpoint ?? "") || rest.length > 0) {
      return klingError(res, 404, 1203)
    }
    if (!knownModel(endpoint!, decodeURIComponent(model ?? ""))) return klingError(res, 404, 1203, "model not found")
    return create(req, res, socket, "current", endpoint!, decodeURIComponent(model!))
  }

  const result = async (res: ServerResponse, url: URL) => {
    const id = url.pathname.slice("/cdn/".length, -".mp4".length)
    const expires = Number(url.searchParams.get("expires"))
    const task = tasks.get(id)
    // Hotlink-protected and deleted after 30 days: a lapsed link is 403.
    if (task === undefined || url.searchParams.get("sig") !== sign(id, expires) || Date.now() > expires) {
      return res.writeHead(403, { "content-type": "text/html" }).end("<html><body>403 Forbidden</body></html>")
    }
    const bytes = await resultBytes(task)
    res.writeHead(200, { "content-type": "video/mp4", "content-length": bytes.length }).end(bytes)
  }

  const route = (req: KlingRequest, res: ServerResponse, socket: Socket, url: URL) => {
    if (req.method === "GET" && req.path.startsWith("/cdn/")) return result(res, url)
    if (req.path.startsWith("/v1/videos/")) return legacy(req, res, socket)
    return current(req, res, socket)
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
        return klingError(res, 400, 1200, "the body is not JSON")
      }
      const request: KlingRequest = {
        at: Date.now(),
        method: req.method ?? "GET",
        path: url.pathname,
        query: Object.fromEntries(url.searchParams),
        headers: req.headers,
        body
      }
      if (!url.pathname.startsWith("/cdn/")) requests.push(request)
      route(request, res, req.socket, url)?.catch((e) => klingError(res, 500, 5000, String(e)))
    })
  })
  const listening = await listenOnLoopback(server)
  origin = `http://127.0.0.1:${listening.port}`
  return {
    url: origin,
    requests,
    faults,
    scenarios,
    tasks,
    fetched,
    clock,
    limits,
    callbacks,
    close: () => {
      callbacks.close()
      return listening.close()
    }
  }
}
