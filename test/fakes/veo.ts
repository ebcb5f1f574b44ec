import { createHmac, randomBytes, randomUUID } from "node:crypto"
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from "node:http"
import type { Socket } from "node:net"
import { listenOnLoopback } from "../support/fakeServer.ts"
import { assertionProblem, makeServiceAccount, type TestServiceAccount } from "./veoAuth.ts"
import { bodyProblem } from "./veoChecks.ts"
import { type FakeOperation, operationText, type Scenario, videoOf } from "./veoOperations.ts"

export type { FakeOperation, Scenario } from "./veoOperations.ts"

/**
 * A fake Google Veo on loopback, as docs/adapters/veo.md (Tests) describes it,
 * both variants on one port:
 * - Gemini API: `POST /v1beta/models/{m}:predictLongRunning` with
 *   `x-goog-api-key`, `GET /v1beta/{operation}`, and the file download
 *   `GET /v1beta/files/{id}:download` (key required) answering 302 to a
 *   signed storage URL that lapses (`resultTtlMs`);
 * - Vertex AI: `POST /v1/projects/{p}/locations/{l}/publishers/google/models/{m}:predictLongRunning`
 *   and `…:fetchPredictOperation`, with a bearer token from `POST /token`,
 *   which verifies the RS256 assertion against the test key's public half;
 *   results inline base64 (optionally padded to megabytes) or `gcsUri`.
 * Bodies are checked (veoChecks.ts); each operation follows a scripted timeline
 * (veoOperations.ts); `faults` break the next creates, polls or token exchanges
 * the way Google breaks in production (docs/adapters/veo.md, Failures).
 *
 * Each API serves the models of its set in `models` (docs/adapters/veo.md,
 * Models): a create or a `GET …/models/{m}` naming any other gets Google's
 * 404 NOT_FOUND, as a shut-down or unknown model does. The Gemini set starts
 * with the Veo 3.1 previews, as Google served them until 22 October 2026
 * (the protocol is unchanged; a test deletes an id to play its shutdown).
 */

export type Fault =
  /** 429 RESOURCE_EXHAUSTED with QuotaFailure, and RetryInfo when `retryDelay` is given; no Retry-After header. */
  | { readonly kind: "rate_limited"; readonly retryDelay?: string; readonly daily?: boolean }
  /** A proxy's HTML page with this status. */
  | { readonly kind: "html"; readonly status: number }
  /** A Google Status body, e.g. 403 PERMISSION_DENIED; `reason` goes into an ErrorInfo detail. */
  | {
    readonly kind: "error"
    readonly status: number
    readonly word: string
    readonly reason?: string
    readonly message?: string
  }
  /** Never answers; nothing is created. */
  | { readonly kind: "hang" }
  /** Create: the operation is created and its answer never comes. */
  | { readonly kind: "lost" }
  /** Create: the operation is created, then the connection is dropped. */
  | { readonly kind: "reset" }

export interface VeoRequest {
  readonly at: number
  readonly method: string
  readonly path: string
  readonly headers: IncomingHttpHeaders
  readonly body: any
}

export interface FakeVeo {
  /** The origin; Gemini's base URL is `${url}/v1beta`, Vertex's `${url}/v1`. */
  readonly url: string
  readonly requests: Array<VeoRequest>
  readonly faults: { readonly create: Array<Fault>; readonly poll: Array<Fault>; readonly token: Array<Fault> }
  readonly scenarios: Array<Scenario>
  readonly operations: Map<string, FakeOperation>
  /** The service account whose assertions the token endpoint accepts (`token_uri` is this fake). */
  readonly account: TestServiceAccount
  /** Bearer tokens issued, in order. */
  readonly tokens: Array<string>
  /** The model ids each API serves; anything else is answered 404 NOT_FOUND. */
  readonly models: { readonly gemini: Set<string>; readonly vertex: Set<string> }
  readonly close: () => Promise<void>
}

const googleError = (
  res: ServerResponse,
  status: number,
  word: string,
  message: string,
  details: Array<unknown> = []
) =>
  res.writeHead(status, { "content-type": "application/json; charset=UTF-8" }).end(JSON.stringify({
    error: { code: status, message, status: word, details }
  }))

const SECRET = randomBytes(16)
const sign = (id: string, expires: number) => createHmac("sha256", SECRET).update(`${id}.${expires}`).digest("hex")

export const GEMINI_SERVED = [
  "veo-3.1-generate-preview",
  "veo-3.1-fast-generate-preview",
  "veo-3.1-lite-generate-preview"
]
export const VERTEX_SERVED = ["veo-3.1-generate-001", "veo-3.1-fast-generate-001", "veo-3.1-lite-generate-001"]

/** The Gemini API's Model resource for a Veo model (`GET /v1beta/models/{m}`). */
const geminiModel = (id: string) => ({
  name: `models/${id}`,
  version: "3.1",
  displayName: id,
  inputTokenLimit: 1024,
  outputTokenLimit: 1,
  supportedGenerationMethods: ["predictLongRunning"]
})

export const startFakeVeo = async (
  apiKeys: ReadonlyArray<string>,
  { project = "test-project", tokenLifetimeS = 3599 } = {}
): Promise<FakeVeo> => {
  const models = { gemini: new Set(GEMINI_SERVED), vertex: new Set(VERTEX_SERVED) }
  const requests: Array<VeoRequest> = []
  const faults = { create: [] as Array<Fault>, poll: [] as Array<Fault>, token: [] as Array<Fault> }
  const scenarios: Array<Scenario> = []
  const operations = new Map<string, FakeOperation>()
  const tokens: Array<string> = []
  const valid = new Map<string, number>()
  let origin = ""
  /** Signed storage lives on another origin, as Google's does, so a key sent there would be a leak. */
  let storageOrigin = ""
  const trusted: { account?: TestServiceAccount } = {}

  const answerFault = (res: ServerResponse, fault: Exclude<Fault, { kind: "hang" | "lost" | "reset" }>) => {
    if (fault.kind === "html") {
      return res.writeHead(fault.status, { "content-type": "text/html" }).end(
        `<html><head><title>Error ${fault.status} (Server Error)!!1</title></head><body><p>That's an error.</p></body></html>`
      )
    }
    if (fault.kind === "error") {
      const details = fault.reason
        ? [{ "@type": "type.googleapis.com/google.rpc.ErrorInfo", reason: fault.reason, domain: "googleapis.com" }]
        : []
      return googleError(res, fault.status, fault.word, fault.message ?? "refused for project 4217", details)
    }
    const quotaId = fault.daily ? "PredictLongRunningRequestsPerDayPerProject" : "PredictLongRunningRequestsPerMinute"
    return googleError(res, 429, "RESOURCE_EXHAUSTED", "Quota exceeded for project 4217", [
      { "@type": "type.googleapis.com/google.rpc.QuotaFailure", violations: [{ quotaId }] },
      ...(fault.retryDelay
        ? [{ "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay: fault.retryDelay }]
        : [])
    ])
  }

  /** Runs the next fault of a list; true when the request is answered (or left hanging) by it. */
  const faulted = (res: ServerResponse, socket: Socket, list: Array<Fault>, onCreated?: () => void) => {
    const fault = list.shift()
    if (fault === undefined) return false
    if (fault.kind === "hang") return true
    if (fault.kind === "lost" || fault.kind === "reset") {
      onCreated?.()
      if (fault.kind === "reset") socket.destroy()
      return true
    }
    answerFault(res, fault)
    return true
  }

  const create = (req: VeoRequest, res: ServerResponse, socket: Socket, api: "gemini" | "vertex", prefix: string) => {
    const model = prefix.split("/").at(-1)!
    if (!models[api].has(model)) {
      // Google's answers to a model it does not serve (any longer): before faults, as Google checks the path first.
      return api === "gemini"
        ? googleError(
          res,
          404,
          "NOT_FOUND",
          `models/${model} is not found for API version v1beta, or is not supported for predictLongRunning. ` +
            "Call ListModels to see the list of available models and their supported methods."
        )
        : googleError(
          res,
          404,
          "NOT_FOUND",
          `Publisher Model \`${prefix}\` was not found or your project does not have access to it.`
        )
    }
    const make = () => {
      const name = `${prefix}/operations/${api === "gemini" ? randomBytes(6).toString("hex") : randomUUID()}`
      operations.set(name, {
        name,
        api,
        body: req.body,
        scenario: scenarios.shift() ?? {},
        createdAt: Date.now(),
        polls: 0
      })
      return name
    }
    if (faulted(res, socket, faults.create, make)) return
    const problem = bodyProblem(req.body, api)
    if (problem) return googleError(res, 400, "INVALID_ARGUMENT", problem)
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ name: make() }))
  }

  const poll = async (res: ServerResponse, socket: Socket, name: string, api: "gemini" | "vertex") => {
    if (faulted(res, socket, faults.poll)) return
    const op = operations.get(name)
    if (op === undefined || op.api !== api) return googleError(res, 404, "NOT_FOUND", `Operation ${name} not found`)
    res.writeHead(200, { "content-type": "application/json" }).end(await operationText(op, origin, true))
  }

  const token = (req: VeoRequest, res: ServerResponse, socket: Socket) => {
    if (faulted(res, socket, faults.token)) return
    const form = new URLSearchParams(String(req.body ?? ""))
    if (form.get("grant_type") !== "urn:ietf:params:oauth:grant-type:jwt-bearer") {
      return res.writeHead(400, { "content-type": "application/json" }).end("{\"error\":\"unsupported_grant_type\"}")
    }
    const problem = assertionProblem(form.get("assertion") ?? "", trusted.account!, `${origin}/token`)
    if (problem) {
      return res.writeHead(400, { "content-type": "application/json" }).end(
        JSON.stringify({ error: "invalid_grant", error_description: problem })
      )
    }
    const t = `ya29.${randomBytes(24).toString("base64url")}`
    tokens.push(t)
    valid.set(t, Date.now() + tokenLifetimeS * 1000)
    res.writeHead(200, { "content-type": "application/json" }).end(
      JSON.stringify({ access_token: t, expires_in: tokenLifetimeS, token_type: "Bearer" })
    )
  }

  const download = (res: ServerResponse, req: VeoRequest, id: string) => {
    if (!apiKeys.includes(String(req.headers["x-goog-api-key"] ?? ""))) {
      return googleError(res, 403, "PERMISSION_DENIED", "Method doesn't allow unregistered callers")
    }
    const op = [...operations.values()].find((o) => o.name.endsWith(`/operations/${id}`))
    const ttl = op?.scenario.resultTtlMs ?? 2 * 86_400_000
    if (op === undefined || op.doneAt === undefined || Date.now() > op.doneAt + ttl) {
      return googleError(res, 404, "NOT_FOUND", "File not found")
    }
    const expires = Date.now() + 60_000
    res.writeHead(302, { location: `${storageOrigin}/storage/${id}.mp4?expires=${expires}&sig=${sign(id, expires)}` })
      .end()
  }

  const storage = async (res: ServerResponse, url: URL) => {
    const id = url.pathname.slice("/storage/".length, -".mp4".length)
    const expires = Number(url.searchParams.get("expires"))
    const op = [...operations.values()].find((o) => o.name.endsWith(`/operations/${id}`))
    if (op === undefined || url.searchParams.get("sig") !== sign(id, expires) || Date.now() > expires) {
      return res.writeHead(403, { "content-type": "text/plain" }).end("Forbidden")
    }
    const bytes = await videoOf(op)
    res.writeHead(200, { "content-type": "video/mp4", "content-length": bytes.length }).end(bytes)
  }

  const route = async (req: VeoRequest, res: ServerResponse, socket: Socket, url: URL) => {
    const path = req.path
    if (req.method === "POST" && path === "/token") return token(req, res, socket)
    if (req.method === "GET" && path.startsWith("/storage/")) return storage(res, url)
    let m = /^\/v1beta\/files\/([^/:]+):download$/.exec(path)
    if (req.method === "GET" && m) return download(res, req, m[1]!)
    if (path.startsWith("/v1beta/")) {
      if (!apiKeys.includes(String(req.headers["x-goog-api-key"] ?? ""))) {
        return googleError(res, 400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key.", [
          { "@type": "type.googleapis.com/google.rpc.ErrorInfo", reason: "API_KEY_INVALID", domain: "googleapis.com" }
        ])
      }
      // The model list (a channel check): Google's page shape.
      if (req.method === "GET" && path === "/v1beta/models") {
        return res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({
          models: [...models.gemini].slice(0, 1).map(geminiModel),
          nextPageToken: "next"
        }))
      }
      m = /^\/v1beta\/models\/([^/:]+)$/.exec(path)
      if (req.method === "GET" && m) {
        if (!models.gemini.has(m[1]!)) {
          return googleError(res, 404, "NOT_FOUND", `models/${m[1]} is not found for API version v1beta`)
        }
        return res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(geminiModel(m[1]!)))
      }
      m = /^\/v1beta\/(models\/[^/:]+):predictLongRunning$/.exec(path)
      if (req.method === "POST" && m) return create(req, res, socket, "gemini", m[1]!)
      if (req.method === "GET" && /^\/v1beta\/models\/[^/]+\/operations\/[^/]+$/.test(path)) {
        return poll(res, socket, path.slice("/v1beta/".length), "gemini")
      }
      return googleError(res, 404, "NOT_FOUND", "no such method")
    }
    if (path.startsWith("/v1/")) {
      const bearer = String(req.headers.authorization ?? "").replace(/^Bearer /, "")
      if (!((valid.get(bearer) ?? 0) > Date.now())) {
        return googleError(res, 401, "UNAUTHENTICATED", "Request had invalid authentication credentials.")
      }
      if (req.method === "GET" && path === "/v1/publishers/google/models") {
        return res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({
          publisherModels: [{ name: "publishers/google/models/veo-3.1-generate-001" }],
          nextPageToken: "next"
        }))
      }
      m = /^\/v1\/publishers\/google\/models\/([^/:]+)$/.exec(path)
      if (req.method === "GET" && m) {
        if (!models.vertex.has(m[1]!)) {
          return googleError(res, 404, "NOT_FOUND", `Publisher Model \`publishers/google/models/${m[1]}\` not found.`)
        }
        return res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({
          name: `publishers/google/models/${m[1]}`,
          versionId: "001",
          launchStage: "GA"
        }))
      }
      m =
        /^\/v1\/(projects\/([^/]+)\/locations\/[^/]+\/publishers\/google\/models\/[^/:]+):(predictLongRunning|fetchPredictOperation)$/
          .exec(path)
      if (req.method !== "POST" || !m) return googleError(res, 404, "NOT_FOUND", "no such method")
      if (m[2] !== project) return googleError(res, 403, "PERMISSION_DENIED", `Permission denied on project ${m[2]}`)
      if (m[3] === "predictLongRunning") return create(req, res, socket, "vertex", m[1]!)
      const name = req.body?.operationName
      if (typeof name !== "string" || !name.startsWith(`${m[1]}/operations/`)) {
        return googleError(res, 400, "INVALID_ARGUMENT", "operationName does not belong to this model")
      }
      return poll(res, socket, name, "vertex")
    }
    return googleError(res, 404, "NOT_FOUND", "no such route")
  }

  const handler = (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      const url = new URL(req.url ?? "/", "http://fake")
      const text = Buffer.concat(chunks).toString("utf8")
      let body: unknown = text
      if (String(req.headers["content-type"] ?? "").includes("json")) {
        try {
          body = text ? JSON.parse(text) : null
        } catch {
          return googleError(res, 400, "INVALID_ARGUMENT", "Invalid JSON payload received.")
        }
      }
      const request = { at: Date.now(), method: req.method ?? "GET", path: url.pathname, headers: req.headers, body }
      requests.push(request)
      route(request, res, req.socket, url).catch((e) => googleError(res, 500, "INTERNAL", String(e)))
    })
  }
  const servers = [await listenOnLoopback(createServer(handler)), await listenOnLoopback(createServer(handler))]
  const [origin0, origin1] = servers.map((s) => `http://127.0.0.1:${s.port}`)
  origin = origin0!
  storageOrigin = origin1!
  const account = makeServiceAccount(`${origin}/token`)
  trusted.account = account
  return {
    url: origin,
    requests,
    faults,
    scenarios,
    operations,
    account,
    tokens,
    models,
    close: () => Promise.all(servers.map((s) => s.close())).then(() => undefined)
  }
}
