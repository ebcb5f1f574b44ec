import { Effect } from "effect"

/**
 * W3C `traceparent` (version 00), the form in which a task keeps the trace
 * context of its create request for the engine to continue.
 */
export interface SpanContext {
  readonly traceId: string
  readonly spanId: string
  readonly sampled: boolean
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/

export const formatTraceparent = (span: SpanContext): string =>
  `00-${span.traceId}-${span.spanId}-${span.sampled ? "01" : "00"}`

export const parseTraceparent = (value: string): SpanContext | undefined => {
  const match = TRACEPARENT.exec(value)
  if (match === null || /^0+$/.test(match[1]!) || /^0+$/.test(match[2]!)) return undefined
  return { traceId: match[1]!, spanId: match[2]!, sampled: (parseInt(match[3]!, 16) & 1) === 1 }
}

/** The current span's trace context, to store with work that continues the trace later (a task); null outside a span. */
export const currentTraceparent = Effect.currentSpan.pipe(
  Effect.map(formatTraceparent),
  Effect.orElseSucceed(() => null)
)
