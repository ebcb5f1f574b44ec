import type { Headers, HttpClientResponse } from "@effect/platform"
import { raw } from "./http.ts"
import type { Target } from "./wire.ts"

/**
 * What the operations tests share beside the typed clients (`./api.ts`,
 * `./adminApi.ts`): a typed call's status beside its decoded answer, and
 * `/metrics` read as text.
 */

/** A typed call's decoded answer with its HTTP status and headers. */
export interface TypedReply<A> {
  readonly status: number
  readonly headers: Headers.Headers
  readonly body: A
}

/**
 * The answer of a typed call made with `withResponse: true`, as status,
 * headers and decoded body, for a test that asserts the status itself:
 * `replyOf(operator(gw).call((c) => c.adminWebhooks.testWebhook({ path: { id }, withResponse: true })))`.
 */
export const replyOf = async <A>(
  call: Promise<readonly [A, HttpClientResponse.HttpClientResponse]>
): Promise<TypedReply<A>> => {
  const [body, response] = await call
  return { status: response.status, headers: response.headers, body }
}

/** A scrape of `/metrics` that was answered 200 with a text body: the exposition is `body`. */
export interface Exposition {
  readonly status: number
  readonly headers: globalThis.Headers
  readonly body: string
}

/**
 * `GET /metrics` with a token (Prometheus text, or OpenMetrics when `accept`
 * asks for it). Over the wire, as scrapers read it (the endpoint is not in
 * the contract); anything but a 200 with a text body fails the test.
 */
export const metricsText = async (gw: Target, token: string, accept?: string): Promise<Exposition> => {
  const reply = await raw(gw, "GET", "/metrics", { key: token, headers: accept === undefined ? {} : { accept } })
  if (reply.status !== 200 || typeof reply.body !== "string") {
    throw new Error(`GET /metrics: ${reply.status} ${JSON.stringify(reply.body)}`)
  }
  return { status: reply.status, headers: reply.headers, body: reply.body }
}
