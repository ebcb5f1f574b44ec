import { Headers, HttpTraceContext } from "@effect/platform"
import { Cause, Clock, Context, Effect, Exit, Layer, Option, Runtime } from "effect"
import { type Failure, isFailure } from "../Failure.ts"
import { Metrics, type MetricsService } from "../metrics/Metrics.ts"
import { answerOf, internalError, unexpectedError } from "./Errors.ts"
import { logRequest, requestIdOf, secondsBetween } from "./Middleware.ts"
import { CurrentRequestId } from "./RequestId.ts"
import { BASELINE_HEADERS } from "./SecurityHeaders.ts"

/** A request as the socket server hands it over, before any of the Effect HTTP stack runs. */
export interface PlainRequest {
  readonly method: string
  /** Path and query, as on the request line. */
  readonly url: string
  /** A header's value by its lower-case name. */
  readonly header: (name: string) => string | undefined
}

/**
 * A body the server writes as the socket takes it, pulled chunk by chunk
 * with plain callbacks (no fiber, no timer of its own): what an endless
 * answer such as a live status stream costs while it waits is its own
 * state and the connection.
 */
export interface StreamedBody {
  /** Called once, before the first pull, with what cuts the connection (for a client that takes nothing). */
  readonly start: (abort: () => void) => void
  /**
   * Hands the next chunk to `deliver`, now or later, or null once the body is
   * complete. The server calls it again only after the socket took the chunk.
   */
  readonly pull: (deliver: (chunk: Uint8Array | null) => void) => void
  /** Called once when the answer is over, however it ended (complete, cut, the client gone, never started). */
  readonly close: () => void
}

/** A whole answer: the server writes it as it is; with `stream`, the headers, then the stream as its body. */
export interface PlainAnswer {
  readonly status: number
  readonly headers: Record<string, string>
  readonly body: string
  readonly stream?: StreamedBody
}

/**
 * One route served beside the contract's router. `match` is synchronous and
 * cheap (it runs for every request); `answer` does what the contract's
 * endpoint does, with the same functions, and returns the JSON body its
 * success schema encodes (or, for an endless answer, the headers of its
 * content and the body the server writes), or fails with the endpoint's own
 * errors.
 */
export interface FastRoute<R> {
  readonly match: (method: string, path: string) => ReadonlyArray<string> | undefined
  /** The contract's path template the matched request is an instance of (the HTTP metrics' route label). */
  readonly template: (params: ReadonlyArray<string>) => string
  readonly answer: (
    params: ReadonlyArray<string>,
    request: PlainRequest
  ) => Effect.Effect<RouteAnswer, Failure, R>
}

/** What a fast route answers: a JSON body, or a body the server writes as it goes with the headers of its content. */
export type RouteAnswer =
  | { readonly status: number; readonly body: unknown }
  | { readonly status: number; readonly headers: Record<string, string>; readonly stream: StreamedBody }

/**
 * The contract's hottest endpoints (a task's status, polled by every client at
 * the `Retry-After` interval) answered without the HttpApi stack: no router, no
 * per-request layers, no schema decoding of a path the route has already
 * matched. A CPU profile of the read path put about half of a request's time in
 * that stack (docs/architecture.md, Fast routes); the fast route does the same
 * checks with the same functions (key check, rate limit, the store's query, the
 * success schema's encoding) and answers byte for byte what the full path
 * answers, which test/http/fast-routes.test.ts checks against the full path.
 *
 * What the gateway middleware adds to every answer is added here too: the
 * request id (kept from `x-request-id` or made), the spec's error body for
 * any failure, the hardening headers, one access log line, the HTTP metrics
 * (by the route's template) and a server span (parented by an incoming
 * `traceparent`). A request with a query string or a `Prefer` header is left
 * to the full path, which is the reference the tests compare with.
 */
export class FastRoutes extends Context.Tag("FastRoutes")<FastRoutes, {
  /** The answer, or undefined at once when no fast route takes the request. */
  readonly handle: (request: PlainRequest) => Promise<PlainAnswer> | undefined
}>() {
  /**
   * The routes take their services when they are made, so their answers need
   * none (a route that reads one at answer time provides it itself, from a
   * context of just what it reads): a request's fiber runs with an empty
   * context. Every span of the request (the server span, each service's)
   * copies its fiber's context to add itself as the parent of what it wraps;
   * with the runtime's context, every service of the gateway (54 when measured), that copy
   * was a Map of 54 entries, about 9 KB of garbage per span, and it grew with
   * every service the gateway gained (docs/architecture.md, Fast routes).
   * The runtime's FiberRefs (logger, log level, tracer, configuration) are
   * kept as they are.
   */
  static readonly layer = (routes: ReadonlyArray<FastRoute<never>>) =>
    Layer.effect(
      FastRoutes,
      Effect.map(Effect.zip(Effect.runtime<never>(), Metrics), ([runtime, metrics]) => {
        const run = Runtime.runPromiseExit(
          Runtime.make({ context: Context.empty(), fiberRefs: runtime.fiberRefs, runtimeFlags: runtime.runtimeFlags })
        )
        return {
          handle: (request) => {
            // A request that states preferences (`Prefer`, such as a long poll's wait) is left to the full path, which honours them.
            if (request.url.includes("?") || request.header("prefer") !== undefined) return undefined
            for (const route of routes) {
              const params = route.match(request.method, request.url)
              if (params === undefined) continue
              const requestId = requestIdOf(request.header("x-request-id"))
              // The answer's effect handles every failure; an exit that is not a success is an interruption (shutdown).
              return run(serve(route, params, request, requestId, metrics)).then((exit) =>
                Exit.isSuccess(exit) ? exit.value : plain(answerOf(internalError(), requestId), requestId)
              )
            }
            return undefined
          }
        }
      })
    )
}

const JSON_TYPE = { "content-type": "application/json" }

/** The trace context headers the server span is parented by (W3C, then B3), as the full path reads them. */
const TRACE_HEADERS = ["traceparent", "b3", "x-b3-traceid", "x-b3-spanid", "x-b3-sampled"]

const plain = (
  answer: { readonly status: number; readonly headers: Record<string, string>; readonly body: unknown },
  requestId: string
): PlainAnswer => ({
  status: answer.status,
  headers: { ...answer.headers, ...JSON_TYPE, ...BASELINE_HEADERS, "x-request-id": requestId },
  body: JSON.stringify(answer.body)
})

/** A streamed answer: its content's headers (its content type among them), then the middleware's. */
const streamed = (
  answer: { readonly status: number; readonly headers: Record<string, string>; readonly stream: StreamedBody },
  requestId: string
): PlainAnswer => ({
  status: answer.status,
  headers: { ...answer.headers, ...BASELINE_HEADERS, "x-request-id": requestId },
  body: "",
  stream: answer.stream
})

const serve = (
  route: FastRoute<never>,
  params: ReadonlyArray<string>,
  request: PlainRequest,
  requestId: string,
  metrics: MetricsService
) => {
  const answered = Effect.gen(function*() {
    const started = yield* Clock.currentTimeNanos
    const answer = yield* route.answer(params, request).pipe(
      Effect.map((answer) => "stream" in answer ? answer : { ...answer, headers: {} as Record<string, string> }),
      Effect.catchAllCause((cause) => {
        if (Cause.isInterruptedOnly(cause)) return Effect.interrupt
        const error = Cause.squash(cause)
        if (isFailure(error)) return Effect.succeed(answerOf(error, requestId))
        return Effect.as(Effect.logError("unhandled failure", cause), answerOf(unexpectedError(error), requestId))
      }),
      Effect.locally(CurrentRequestId, requestId)
    )
    const seconds = secondsBetween(started, yield* Clock.currentTimeNanos)
    metrics.httpRequest(request.method, route.template(params), answer.status, seconds)
    yield* logRequest(request.method, request.url, answer.status, Math.round(seconds * 1000))
    yield* Effect.annotateCurrentSpan("http.response.status_code", answer.status)
    return "stream" in answer ? streamed(answer, requestId) : plain(answer, requestId)
  })
  let traceHeaders: Record<string, string> | undefined
  for (const name of TRACE_HEADERS) {
    const value = request.header(name)
    if (value !== undefined) (traceHeaders ??= {})[name] = value
  }
  const parent = traceHeaders === undefined
    ? Option.none()
    : HttpTraceContext.fromHeaders(Headers.fromInput(traceHeaders))
  return answered.pipe(
    Effect.annotateLogs("request_id", requestId),
    Effect.withSpan(`http.server ${request.method}`, {
      kind: "server",
      captureStackTrace: false,
      ...(Option.isSome(parent) ? { parent: parent.value } : {}),
      // `gateway.fast_route` tells an operator reading a trace which path served the request.
      attributes: { "http.request.method": request.method, "url.path": request.url, "gateway.fast_route": true }
    })
  )
}
