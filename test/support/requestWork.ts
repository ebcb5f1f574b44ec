import * as NodeSdk from "@effect/opentelemetry/NodeSdk"
import { PGlite } from "@electric-sql/pglite"
import type { Span, SpanProcessor } from "@opentelemetry/sdk-trace-base"
import { Fiber, FiberRef, HashMap, Layer, Logger, LogLevel, Option } from "effect"
import { randomBytes } from "node:crypto"
import pg from "pg"
import { CurrentRequestId, PlainRequest } from "../../src/platform/http/RequestId.ts"
import { jsonLineLogger } from "../../src/platform/JsonLogLine.ts"

/**
 * What a request made the gateway do, counted rather than timed, each piece
 * attributed to the request that caused it, so the gateway's background work
 * (listeners, watchers, tickers) never counts:
 *
 * - **Statements sent to the database**: the drivers' own calls, `pg`'s
 *   `Client.query` (every statement of `@effect/sql-pg` and of PooledQuery,
 *   BEGIN and COMMIT included) and PGlite's `query` and `exec`. A call is the
 *   request's when the Effect fiber making it carries the request's id (the
 *   `x-request-id` the test sends: `CurrentRequestId`, or the `request_id`
 *   log annotation the middleware and the fast routes set around the whole
 *   request); forked fibers inherit both. `pg`'s pool hands a connection over
 *   in a later tick, outside the fiber, so the fiber that asked the pool for
 *   it (`Pool.connect`, which `Pool.query` calls too) owns what is sent on it
 *   inside that hand-over.
 * - **Spans started**, by an OpenTelemetry span processor (the tracer the
 *   service uses with an exporter), attributed by trace id: the test sends a
 *   `traceparent` of its own, which the server span continues.
 * - **Log lines written** at the service's level (info), formatted by the
 *   service's own JSON line logger, attributed by their `request_id`.
 */
export interface Work {
  readonly statements: ReadonlyArray<string>
  readonly spans: ReadonlyArray<string>
  readonly logLines: ReadonlyArray<string>
}

const statements = new Map<string, Array<string>>()
const spans = new Map<string, Array<Span>>()
const logLines = new Map<string, Array<string>>()

/**
 * The request id of the fiber running now, if any (the id the request's
 * fiber carries, or its log annotation), or of the request plain code is
 * serving now (the fast routes' quick path: `PlainRequest`).
 */
const requestOfCurrentFiber = (): string | undefined => {
  const fiber = Fiber.getCurrentFiber()
  if (Option.isNone(fiber)) return PlainRequest.current === "" ? undefined : PlainRequest.current
  const id = fiber.value.getFiberRef(CurrentRequestId)
  if (id !== "") return id
  const annotated = HashMap.get(fiber.value.getFiberRef(FiberRef.currentLogAnnotations), "request_id")
  return Option.isSome(annotated) && typeof annotated.value === "string" ? annotated.value : undefined
}

/** The owner of a connection being handed over by `pg`'s pool (see `Work`). */
let handingOver: string | undefined

const record = (request: string | undefined, text: unknown) => {
  if (request === undefined || !statements.has(request)) return
  const sql = typeof text === "string" ? text : String((text as { text?: unknown } | null)?.text ?? text)
  statements.get(request)!.push(sql.replace(/\s+/g, " ").trim())
}

/** The methods replaced, with their originals, to put back. */
let patches: Array<{ readonly target: any; readonly name: string; readonly original: any }> = []

/** Replaces `target[name]` by what `wrap` makes of the original. */
const patch = (target: any, name: string, wrap: (original: any) => unknown) => {
  const original = target[name]
  patches.push({ target, name, original })
  target[name] = wrap(original)
}

/** A driver method that sends one statement, its first argument (text, or pg's `{ text }`), counted first. */
const countingStatements = (owner: () => string | undefined) => (original: any) =>
  function(this: unknown, ...args: Array<unknown>) {
    record(owner(), args[0])
    return original.apply(this, args)
  }

/** Installs the drivers' counting wrappers (idempotent); `uninstall` puts the originals back. */
export const install = () => {
  if (patches.length > 0) return
  patch(
    pg.Pool.prototype,
    "connect",
    (original) =>
      function(this: unknown, callback?: (...args: Array<unknown>) => unknown) {
        if (typeof callback !== "function") return original.call(this, callback)
        const owner = requestOfCurrentFiber()
        return original.call(this, (...args: Array<unknown>) => {
          const before = handingOver
          handingOver = owner
          try {
            return callback(...args)
          } finally {
            handingOver = before
          }
        })
      }
  )
  patch(pg.Client.prototype, "query", countingStatements(() => handingOver ?? requestOfCurrentFiber()))
  patch(PGlite.prototype, "query", countingStatements(requestOfCurrentFiber))
  patch(PGlite.prototype, "exec", countingStatements(requestOfCurrentFiber))
}

export const uninstall = () => {
  for (const { name, original, target } of patches.reverse()) target[name] = original
  patches = []
}

/** Records every span started, by its trace. */
const spanCounter: SpanProcessor = {
  onStart: (span: Span) => spans.get(span.spanContext().traceId)?.push(span),
  onEnd: () => {},
  forceFlush: () => Promise.resolve(),
  shutdown: () => Promise.resolve()
}

/** Keeps the JSON line of every log call at info or above, by its `request_id`. */
const lineCounter = Logger.make((options) => {
  const line = jsonLineLogger.log(options)
  const id = HashMap.get(options.annotations, "request_id")
  if (Option.isSome(id) && typeof id.value === "string") logLines.get(id.value)?.push(line)
})

/**
 * What a test gateway needs (`startGateway`'s `extra`): the span counter as
 * the service's tracer, the line counter as its logger and the service's
 * own log level (info; the test gateway otherwise shows only warnings).
 */
export const countingLayer = Layer.mergeAll(
  NodeSdk.layer(() => ({ resource: { serviceName: "request-work" }, spanProcessor: spanCounter })),
  Logger.replace(Logger.defaultLogger, lineCounter),
  Logger.minimumLogLevel(LogLevel.Info)
)

let sequence = 0

/**
 * Runs `send` with the headers that mark one request (its `x-request-id`
 * and `traceparent`) and answers what the gateway did for it. The answer's
 * own work is done before its response is written (the access log line and
 * the spans' starts included); what the request would leave running after it
 * is counted until the event loop's next turn.
 */
export const counted = async <A>(send: (headers: Record<string, string>) => Promise<A>) => {
  install()
  const requestId = `req_counted_${++sequence}_${randomBytes(4).toString("hex")}`
  const traceId = randomBytes(16).toString("hex")
  statements.set(requestId, [])
  spans.set(traceId, [])
  logLines.set(requestId, [])
  try {
    const result = await send({
      "x-request-id": requestId,
      traceparent: `00-${traceId}-${randomBytes(8).toString("hex")}-01`
    })
    await new Promise((resolve) => setImmediate(resolve))
    const work: Work = {
      statements: [...statements.get(requestId)!],
      // A fast route's server span says so (its attributes are set once it has started).
      spans: spans.get(traceId)!.map((span) =>
        span.attributes["gateway.fast_route"] === true ? `${span.name} [fast route]` : span.name
      ).sort(),
      logLines: [...logLines.get(requestId)!]
    }
    return { result, work }
  } finally {
    statements.delete(requestId)
    spans.delete(traceId)
    logLines.delete(requestId)
  }
}
