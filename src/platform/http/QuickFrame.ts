import {
  Cause,
  Clock,
  Context,
  type Effect,
  Exit,
  FiberId,
  FiberRef,
  FiberRefs,
  HashMap,
  HashSet,
  List,
  LogLevel,
  Option,
  Runtime,
  Tracer
} from "effect"
import { currentServices } from "effect/DefaultServices"
import { CurrentRequestId } from "./RequestId.ts"

/**
 * What an Effect fiber does around a request (a span, a log line, the
 * request's id in its fiber refs), done without one, from the runtime the
 * fast routes run on: a request the fast path can answer from this replica's
 * memory and one statement pays for no fiber of its own, no `withSpan`, no
 * `annotateLogs`, no `locally` (docs/architecture.md, Fast routes: what each
 * costs). What it makes is what those make, read from the same fiber refs:
 *
 * - a span is the runtime's tracer's, started and ended as `Effect.withSpan`
 *   does, with the runtime's span annotations and links (with tracing
 *   switched off there is no quick path: `available`);
 * - a log line goes to the runtime's loggers at its minimum level, with the
 *   span as the line's parent (Effect's tracer logger adds it to the span as
 *   an event), as `Effect.logInfo` inside `withSpan` would;
 * - `run` runs an effect on a fiber of its own that carries the request's id
 *   (`CurrentRequestId`, the `request_id` log annotation) with the span as its
 *   parent, so what it does (a statement and its span) belongs to the request
 *   as it would inside the request's fiber;
 * - `trace` runs a promise inside a span of its own, for a statement the
 *   database's pool takes without an effect (PooledQuery.rowsNow).
 */
export interface QuickFrame {
  /**
   * False when the runtime's tracing is switched off: `withSpan` then makes
   * spans that record nothing, which this frame does not imitate, so the
   * requests take the fiber's path.
   */
  readonly available: boolean
  readonly nowNanos: () => bigint
  readonly startSpan: (
    name: string,
    parent: Option.Option<Tracer.AnySpan>,
    kind: Tracer.SpanKind,
    attributes: Record<string, unknown>
  ) => Tracer.Span
  readonly endSpan: (span: Tracer.Span) => void
  readonly logInfo: (message: string, annotations: HashMap.HashMap<string, unknown>, span: Tracer.Span) => void
  readonly run: <A, E>(effect: Effect.Effect<A, E>, requestId: string, span: Tracer.Span) => Promise<Exit.Exit<A, E>>
  /** `PlainTrace` for one request, its spans children of `parent`. */
  readonly trace: (parent: Tracer.Span) => PlainTrace
}

/**
 * Runs `start` inside a span of its own, as `Effect.withSpan` runs an effect:
 * the span ends when the promise settles, with the outcome (a rejection is a
 * defect, as `Effect.orDie` makes it).
 */
export type PlainTrace = <A>(
  name: string,
  attributes: Record<string, unknown>,
  start: () => Promise<A>
) => Promise<A>

const NO_LINKS: ReadonlyArray<Tracer.SpanLink> = []

export const makeQuickFrame = (runtime: Runtime.Runtime<never>): QuickFrame => {
  const refs = runtime.fiberRefs
  const services = FiberRefs.getOrDefault(refs, currentServices)
  const tracer = Context.get(services, Tracer.Tracer)
  const clock = Context.get(services, Clock.Clock)
  const tracing = FiberRefs.getOrDefault(refs, FiberRef.currentTracerEnabled)
  const timing = FiberRefs.getOrDefault(refs, FiberRef.currentTracerTimingEnabled)
  const spanAnnotations = FiberRefs.getOrDefault(refs, FiberRef.currentTracerSpanAnnotations)
  const spanLinks = FiberRefs.getOrDefault(refs, FiberRef.currentTracerSpanLinks)
  const links = spanLinks.length === 0 ? NO_LINKS : Array.from(spanLinks)
  const loggers = FiberRefs.getOrDefault(refs, FiberRef.currentLoggers)
  const minimumLevel = FiberRefs.getOrDefault(refs, FiberRef.currentMinimumLogLevel)
  const baseAnnotations = FiberRefs.getOrDefault(refs, FiberRef.currentLogAnnotations)
  const logsInfo = LogLevel.greaterThanEqual(LogLevel.Info, minimumLevel)
  const nowNanos = () => timing ? clock.unsafeCurrentTimeNanos() : 0n

  const startSpan: QuickFrame["startSpan"] = (name, parent, kind, attributes) => {
    const span = tracer.span(name, parent, Context.empty(), links, nowNanos(), kind, { captureStackTrace: false })
    HashMap.forEach(spanAnnotations, (value, key) => span.attribute(key, value))
    for (const key in attributes) span.attribute(key, attributes[key])
    return span
  }

  /** The fiber refs of what runs for the request: its id, its log annotation, its span as the parent. */
  const requestRuntime = (requestId: string, span: Tracer.Span) =>
    Runtime.make({
      context: Context.make(Tracer.ParentSpan, span) as Context.Context<never>,
      fiberRefs: FiberRefs.updateManyAs(refs, {
        entries: [
          [CurrentRequestId, [[FiberId.none, requestId]]],
          [FiberRef.currentLogAnnotations, [[FiberId.none, HashMap.set(baseAnnotations, "request_id", requestId)]]]
        ]
      }),
      runtimeFlags: runtime.runtimeFlags
    })

  return {
    available: tracing,
    nowNanos,
    startSpan,
    endSpan: (span) => {
      if (span.status._tag === "Started") span.end(nowNanos(), Exit.void)
    },
    logInfo: (message, annotations, span) => {
      if (!logsInfo || HashSet.size(loggers) === 0) return
      const context = FiberRefs.updateAs(refs, {
        fiberId: FiberId.none,
        fiberRef: FiberRef.currentContext,
        value: Context.make(Tracer.ParentSpan, span) as Context.Context<never>
      })
      const options = {
        fiberId: FiberId.unsafeMake(),
        logLevel: LogLevel.Info,
        // As `Effect.logInfo(message)` passes it: the list of its arguments.
        message: [message],
        cause: Cause.empty,
        context,
        spans: List.empty(),
        annotations: HashMap.union(baseAnnotations, annotations),
        date: new Date(clock.unsafeCurrentTimeMillis())
      }
      for (const logger of loggers) logger.log(options)
    },
    run: (effect, requestId, span) => Runtime.runPromiseExit(requestRuntime(requestId, span))(effect),
    trace: (parent) => (name, attributes, start) => {
      const span = startSpan(name, Option.some(parent), "internal", attributes)
      let started: Promise<any>
      try {
        started = start()
      } catch (error) {
        started = Promise.reject(error)
      }
      return started.then(
        (value) => {
          span.end(nowNanos(), Exit.void)
          return value
        },
        (error) => {
          span.end(nowNanos(), Exit.die(error))
          throw error
        }
      )
    }
  }
}
