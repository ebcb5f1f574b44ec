import { Headers, HttpTraceContext } from "@effect/platform"
import { Cause, Clock, Context, Effect, Exit, Layer, Option, Runtime, type Tracer } from "effect"
import { type Failure, isFailure } from "../Failure.ts"
import { Metrics, type MetricsService } from "../metrics/Metrics.ts"
import { answerOf, internalError, unexpectedError } from "./Errors.ts"
import { accessAnnotations, logRequest, requestIdOf, secondsBetween } from "./Middleware.ts"
import { makeQuickFrame, type PlainTrace, type QuickFrame } from "./QuickFrame.ts"
import { CurrentRequestId } from "./RequestId.ts"
import { BASELINE_HEADERS } from "./SecurityHeaders.ts"

/** A request as the socket server hands it over, before any of the Effect HTTP stack runs. */
export interface PlainRequest {
  readonly method: string
  /** Path and query, as on the request line. */
  readonly url: string
  /** A header's value by its lower-case name. */
  readonly header: (name: string) => string | undefined
  /**
   * The whole body, as it arrives, or undefined when it has not all come
   * within `timeoutMs`; it rejects when the connection breaks off first. A
   * route reads it only for a request whose `Content-Length` it took within
   * its limit (a body the server delimits by that length): any other body is
   * left to the full path, which bounds what it reads.
   */
  readonly body: (timeoutMs: number) => Promise<Uint8Array | undefined>
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
  /** The path's parameters when the route takes the request; its headers may send it to the full path. */
  readonly match: (method: string, path: string, request: PlainRequest) => ReadonlyArray<string> | undefined
  /** The contract's path template the matched request is an instance of (the HTTP metrics' route label). */
  readonly template: (params: ReadonlyArray<string>) => string
  readonly answer: (
    params: ReadonlyArray<string>,
    request: PlainRequest
  ) => Effect.Effect<RouteAnswer, Failure, R>
  /**
   * The same answer for the route's common request, made without a fiber of
   * the request's own (QuickFrame.ts): called first, synchronously; it
   * answers undefined, having done nothing, when the request is not one it
   * takes, and `answer` serves it. Otherwise it answers what finishes the
   * request, run inside the server span: the body, or the contract's failure.
   */
  readonly quick?: (
    params: ReadonlyArray<string>,
    request: PlainRequest
  ) => ((request: QuickRequest) => Promise<QuickAnswer>) | undefined
}

/** What the quick part of a route gets: the server span to annotate, and a way to run an effect as the request's. */
export interface QuickRequest {
  readonly span: Tracer.Span
  /** Runs an effect on a fiber of the request's (its id, its span as the parent: QuickFrame.run). */
  readonly run: <A, E>(effect: Effect.Effect<A, E>) => Promise<Exit.Exit<A, E>>
  /** Runs a promise inside a span of the request's, without a fiber (QuickFrame.trace). */
  readonly trace: PlainTrace
}

/** A JSON answer: its status, the headers of its own, and the body. */
export interface JsonAnswer {
  readonly status: number
  readonly headers?: Record<string, string>
  readonly body: unknown
}

export type QuickAnswer = JsonAnswer | Failure

/** What a fast route answers: a JSON body, or a body the server writes as it goes with the headers of its content. */
export type RouteAnswer =
  | JsonAnswer
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
        const bare = Runtime.make({
          context: Context.empty(),
          fiberRefs: runtime.fiberRefs,
          runtimeFlags: runtime.runtimeFlags
        })
        const run = Runtime.runPromiseExit(bare)
        const frame = makeQuickFrame(bare)
        return {
          handle: (request) => {
            // A request that states preferences (`Prefer`, such as a long poll's wait) is left to the full path, which honours them.
            if (request.url.includes("?") || request.header("prefer") !== undefined) return undefined
            for (const route of routes) {
              const params = route.match(request.method, request.url, request)
              if (params === undefined) continue
              const requestId = requestIdOf(request.header("x-request-id"))
              const quick = frame.available ? route.quick?.(params, request) : undefined
              if (quick !== undefined) return serveQuick(frame, run, route, params, request, requestId, metrics, quick)
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

/** The headers of every JSON answer, the request id aside. */
const JSON_HEADERS = { ...JSON_TYPE, ...BASELINE_HEADERS }

const plain = (
  answer: { readonly status: number; readonly headers: Record<string, string>; readonly body: unknown },
  requestId: string
): PlainAnswer => {
  // Most answers add no header of their own: one copy of the fixed ones, then the request id.
  const headers: Record<string, string> = { ...answer.headers, ...JSON_HEADERS }
  headers["x-request-id"] = requestId
  return { status: answer.status, headers, body: JSON.stringify(answer.body) }
}

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

/** The server span's parent, from the request's trace context headers (W3C, then B3), as the full path reads them. */
const parentOf = (request: PlainRequest): Option.Option<Tracer.AnySpan> => {
  let traceHeaders: Record<string, string> | undefined
  for (const name of TRACE_HEADERS) {
    const value = request.header(name)
    if (value !== undefined) (traceHeaders ??= {})[name] = value
  }
  return traceHeaders === undefined ? Option.none() : HttpTraceContext.fromHeaders(Headers.fromInput(traceHeaders))
}

/** The server span's name and attributes, on either path. */
const serverSpanName = (request: PlainRequest) => `http.server ${request.method}`
const serverSpanAttributes = (request: PlainRequest) => ({
  "http.request.method": request.method,
  "url.path": request.url,
  // `gateway.fast_route` tells an operator reading a trace which path served the request.
  "gateway.fast_route": true
})

/**
 * `serve` without a fiber of the request's own, for a request the route's
 * quick part took: the same server span, answer, metrics and access line,
 * made by QuickFrame.ts from the same runtime. A defect is logged as the
 * fiber's path logs it and answered 500.
 */
const serveQuick = async (
  frame: QuickFrame,
  run: (effect: Effect.Effect<void>) => Promise<unknown>,
  route: FastRoute<never>,
  params: ReadonlyArray<string>,
  request: PlainRequest,
  requestId: string,
  metrics: MetricsService,
  quick: (request: QuickRequest) => Promise<QuickAnswer>
): Promise<PlainAnswer> => {
  const span = frame.startSpan(serverSpanName(request), parentOf(request), "server", serverSpanAttributes(request))
  const started = frame.nowNanos()
  let answer: { readonly status: number; readonly headers: Record<string, string>; readonly body: unknown }
  try {
    const done = await quick({
      span,
      run: (effect) => frame.run(effect, requestId, span),
      trace: frame.trace(span)
    })
    answer = isFailure(done)
      ? answerOf(done, requestId)
      : { status: done.status, headers: done.headers ?? {}, body: done.body }
  } catch (defect) {
    await run(
      Effect.logError("unhandled failure", Cause.die(defect)).pipe(
        Effect.annotateLogs("request_id", requestId),
        Effect.withParentSpan(span)
      )
    )
    answer = answerOf(unexpectedError(defect), requestId)
  }
  const seconds = secondsBetween(started, frame.nowNanos())
  metrics.httpRequest(request.method, route.template(params), answer.status, seconds)
  frame.logInfo(
    "request",
    accessAnnotations(requestId, request.method, request.url, answer.status, Math.round(seconds * 1000)),
    span
  )
  span.attribute("http.response.status_code", answer.status)
  frame.endSpan(span)
  return plain(answer, requestId)
}

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
      Effect.map((answer) => "stream" in answer ? answer : { ...answer, headers: answer.headers ?? {} }),
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
  const parent = parentOf(request)
  return answered.pipe(
    Effect.annotateLogs("request_id", requestId),
    Effect.withSpan(serverSpanName(request), {
      kind: "server",
      captureStackTrace: false,
      ...(Option.isSome(parent) ? { parent: parent.value } : {}),
      attributes: serverSpanAttributes(request)
    })
  )
}
