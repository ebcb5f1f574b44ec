import * as NodeSdk from "@effect/opentelemetry/NodeSdk"
import { PGlite } from "@electric-sql/pglite"
import type { Span, SpanProcessor } from "@opentelemetry/sdk-trace-base"
import { type Context, Effect, Fiber, FiberRef, HashMap, Layer, Logger, LogLevel, Option, Supervisor } from "effect"
import { randomBytes } from "node:crypto"
import pg from "pg"
import { CurrentRequestId } from "../../src/platform/http/RequestId.ts"
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
 *   inside that hand-over. A call made on no fiber at all is the fast routes'
 *   quick path's (platform/http/QuickFrame.ts), the one piece of the gateway
 *   that runs outside Effect, so it is the request being counted (`counted`
 *   counts one at a time).
 * - **Fibers started**, by a supervisor: a forked fiber is its parent's
 *   request's, a fiber started from code on no fiber (the server handing the
 *   request over, the quick path running an effect) the counted request's.
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
  readonly fibers: number
}

const statements = new Map<string, Array<string>>()
const spans = new Map<string, Array<Span>>()
const logLines = new Map<string, Array<string>>()
const fibers = new Map<string, number>()

/**
 * The request id of the fiber running now (the id the request's fiber
 * carries, or its log annotation). Code that runs on no fiber at all is the
 * fast routes' quick path (platform/http/QuickFrame.ts), the gateway's one
 * piece of work outside Effect: what it sends is the request's being
 * counted, one at a time (`counted`), however many turns of the event loop
 * later it sends it. The gateway's background work runs on fibers without a
 * request id, so it never counts.
 */
const requestOfCurrentFiber = (): string => {
  const fiber = Fiber.getCurrentFiber()
  return Option.isNone(fiber) ? inFlight ?? BACKGROUND : requestOfFiber(fiber.value)
}

/** The owner of a connection being handed over by `pg`'s pool (see `Work`). */
let handingOver: string | undefined
/** The owner of work that is no request's: a fiber without a request id (listeners, watchers, tickers). */
const BACKGROUND = ""

const record = (request: string, text: unknown) => {
  if (!statements.has(request)) return
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
const countingStatements = (owner: () => string) => (original: any) =>
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

/** The request a fiber serves: the id it carries, or its log annotation; BACKGROUND for none. */
const requestOfFiber = (fiber: Fiber.RuntimeFiber<unknown, unknown>): string => {
  const id = fiber.getFiberRef(CurrentRequestId)
  if (id !== "") return id
  const annotated = HashMap.get(fiber.getFiberRef(FiberRef.currentLogAnnotations), "request_id")
  return Option.isSome(annotated) && typeof annotated.value === "string" ? annotated.value : BACKGROUND
}

/**
 * Counts every fiber started, by request: a fiber forked by another is its
 * parent's request's; a fiber started from code on no fiber (the server
 * handing a request to the gateway, the quick path running an effect) is
 * the counted request's.
 */
class FiberCounter extends Supervisor.AbstractSupervisor<void> {
  readonly value = Effect.void
  override onStart<A, E, R>(
    _context: Context.Context<R>,
    _effect: Effect.Effect<A, E, R>,
    parent: Option.Option<Fiber.RuntimeFiber<any, any>>
  ) {
    const owner = Option.isSome(parent)
      ? requestOfFiber(parent.value)
      : Option.isNone(Fiber.getCurrentFiber())
      ? inFlight ?? BACKGROUND
      : requestOfFiber(Option.getOrThrow(Fiber.getCurrentFiber()))
    if (fibers.has(owner)) fibers.set(owner, fibers.get(owner)! + 1)
  }
}

/**
 * What a test gateway needs (`startGateway`'s `extra`): the span counter as
 * the service's tracer, the line counter as its logger and the service's
 * own log level (info; the test gateway otherwise shows only warnings).
 */
export const countingLayer = Layer.mergeAll(
  NodeSdk.layer(() => ({ resource: { serviceName: "request-work" }, spanProcessor: spanCounter })),
  Logger.replace(Logger.defaultLogger, lineCounter),
  Logger.minimumLogLevel(LogLevel.Info),
  Supervisor.addSupervisor(new FiberCounter())
)

let sequence = 0
/** The request being counted now, if any (`counted` counts one at a time). */
let inFlight: string | undefined

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
  if (inFlight !== undefined) throw new Error("counted: one request at a time")
  statements.set(requestId, [])
  spans.set(traceId, [])
  logLines.set(requestId, [])
  fibers.set(requestId, 0)
  inFlight = requestId
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
      logLines: [...logLines.get(requestId)!],
      fibers: fibers.get(requestId)!
    }
    return { result, work }
  } finally {
    inFlight = undefined
    statements.delete(requestId)
    spans.delete(traceId)
    logLines.delete(requestId)
    fibers.delete(requestId)
  }
}
