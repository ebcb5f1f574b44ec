import { ADMIN_TOKEN, type TestGateway } from "./gateway.ts"

/** Where requests go: an in-process gateway or a service running as a process. */
export type Target = Pick<TestGateway, "url">

export interface Reply {
  readonly status: number
  readonly headers: Headers
  readonly body: any
}

const isReset = (e: unknown) =>
  e instanceof TypeError && String((e as { cause?: { code?: string } }).cause?.code) === "ECONNRESET"

/**
 * `fetch`, sent again once when it met a reset: the gateway runs in the test's
 * own process, so on a loaded machine fetch may reuse a kept-alive socket the
 * server has just closed as idle. The server never read that request (a reset
 * before any answer on a reused socket), so sending it again is what browsers
 * do too. A body that is a stream could not be sent twice; these are not.
 */
export const fetchRetryingReset = async (url: string, init: RequestInit): Promise<Response> => {
  try {
    return await fetch(url, init)
  } catch (e) {
    if (!isReset(e)) throw e
    return fetch(url, init)
  }
}

/** One request over real HTTP; the body is parsed as JSON when it is JSON. */
export const call = async (
  gw: Target,
  method: string,
  path: string,
  options: {
    readonly key?: string
    readonly json?: unknown
    readonly body?: BodyInit
    readonly headers?: Record<string, string>
  } = {}
): Promise<Reply> => {
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

export const admin = (gw: Target, method: string, path: string, json?: unknown) =>
  call(gw, method, path, { key: ADMIN_TOKEN, ...(json === undefined ? {} : { json }) })

/** An account with one key of each kind, through the admin API. */
export const createAccount = async (gw: Target, body: Record<string, unknown> = { name: "acme" }) => {
  const account = await admin(gw, "POST", "/admin/v1/accounts", body)
  if (account.status !== 201) throw new Error(`account: ${account.status} ${JSON.stringify(account.body)}`)
  const model = await admin(gw, "POST", `/admin/v1/accounts/${account.body.id}/keys`, { kind: "model" })
  const resource = await admin(gw, "POST", `/admin/v1/accounts/${account.body.id}/keys`, { kind: "resource" })
  return { id: account.body.id as string, account: account.body, model: model.body, resource: resource.body }
}

/** Asserts the spec's HTTP error body and that its request id matches the header. */
export const expectError = (reply: Reply, status: number, code: string, type?: string) => {
  const problems: Array<string> = []
  if (reply.status !== status) problems.push(`status ${reply.status} != ${status}`)
  const error = reply.body?.error
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
