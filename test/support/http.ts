import { ADMIN_TOKEN } from "./gateway.ts"
import { fetchRetryingReset, type Target } from "./wire.ts"

export { fetchRetryingReset, type Target } from "./wire.ts"

export interface RawReply {
  readonly status: number
  readonly headers: Headers
  readonly body: unknown
}

interface RawOptions {
  readonly key?: string
  /** Sent as JSON: anything, valid or not, since the raw path is for what the typed client would refuse to send. */
  readonly json?: unknown
  readonly body?: BodyInit
  readonly headers?: Record<string, string>
}

const send = async (gw: Target, method: string, path: string, options: RawOptions) => {
  const headers: Record<string, string> = { ...options.headers }
  if (options.key !== undefined) headers.authorization = `Bearer ${options.key}`
  let body = options.body
  if (options.json !== undefined) {
    headers["content-type"] ??= "application/json"
    body = JSON.stringify(options.json)
  }
  const res = await fetchRetryingReset(gw.url + path, { method, headers, ...(body === undefined ? {} : { body }) })
  const text = await res.text()
  let parsed: unknown = text
  if ((res.headers.get("content-type") ?? "").includes("application/json")) parsed = JSON.parse(text)
  return { status: res.status, headers: res.headers, body: parsed }
}

/**
 * One request over real HTTP outside the typed client (`./api.ts`), for what
 * a test sends wrong on purpose or where the wire itself is the point (bad
 * JSON, headers, bytes, fuzzing). The body is parsed when it is JSON and is
 * `unknown`: narrow it with `expectError` or the test's own checks.
 */
export const raw = (gw: Target, method: string, path: string, options: RawOptions = {}): Promise<RawReply> =>
  send(gw, method, path, options)

/** An admin request outside the typed admin client (`./adminApi.ts`), for what is wrong on purpose. */
export const rawAdmin = (gw: Target, method: string, path: string, json?: unknown) =>
  raw(gw, method, path, { key: ADMIN_TOKEN, ...(json === undefined ? {} : { json }) })

/** The `error` object of an answer's body, when it has one. */
export const errorOf = (body: unknown): Record<string, unknown> | undefined => {
  if (typeof body !== "object" || body === null || !("error" in body)) return undefined
  const error = (body as { error: unknown }).error
  return typeof error === "object" && error !== null ? error as Record<string, unknown> : undefined
}

/** Asserts the spec's HTTP error body and that its request id matches the header. */
export const expectError = (reply: RawReply, status: number, code: string, type?: string) => {
  const problems: Array<string> = []
  if (reply.status !== status) problems.push(`status ${reply.status} != ${status}`)
  const error = errorOf(reply.body)
  if (!error || typeof error !== "object") problems.push(`no error body: ${JSON.stringify(reply.body)}`)
  else {
    if (error.code !== code) problems.push(`code ${error.code} != ${code}`)
    if (type !== undefined && error.type !== type) problems.push(`type ${error.type} != ${type}`)
    if (typeof error.message !== "string" || error.message.length === 0) problems.push("empty message")
    if (!error.request_id || error.request_id !== reply.headers.get("x-request-id")) {
      problems.push(`request_id ${error.request_id} != header ${reply.headers.get("x-request-id")}`)
    }
    const keys = Object.keys(error).sort().join(",")
    if (keys !== "code,message,request_id,type") problems.push(`error keys ${keys}`)
  }
  if (problems.length) throw new Error(`${problems.join("; ")}\n${JSON.stringify(reply.body)}`)
}
