import { Cause, FiberId, Logger } from "effect"

/** An annotation value JSON writes as it is (Effect's structured logger passes these through unchanged). */
const isPlain = (value: unknown) =>
  value === null || value === undefined || typeof value === "string" || typeof value === "number" ||
  typeof value === "boolean"

/**
 * The line `Logger.jsonLogger` writes, byte for byte, made directly for the
 * common line: one string message, annotations of plain values, no cause (every
 * access log line). Effect's logger builds an intermediate record and
 * serialises it through a replacer that guards against cycles and redacts,
 * about a quarter of the cost of an authenticated read's access line
 * (docs/performance.md, Authenticated reads); a plain line has nothing to guard
 * or redact. Anything else (a cause, an object or error, several message parts)
 * goes through `Logger.jsonLogger` itself. test/http/json-log-line.test.ts compares
 * the two.
 */
export const jsonLineLogger: Logger.Logger<unknown, string> = Logger.make((options) => {
  const { annotations, cause, date, fiberId, logLevel, spans } = options
  const message = Array.isArray(options.message) && options.message.length === 1
    ? options.message[0]
    : options.message
  if (typeof message !== "string" || !Cause.isEmpty(cause)) return Logger.jsonLogger.log(options)
  const annotationsObject: Record<string, unknown> = {}
  for (const [key, value] of annotations) {
    if (!isPlain(value)) return Logger.jsonLogger.log(options)
    annotationsObject[key] = value
  }
  const now = date.getTime()
  const spansObject: Record<string, number> = {}
  for (const span of spans) spansObject[span.label] = now - span.startTime
  return JSON.stringify({
    message,
    logLevel: logLevel.label,
    timestamp: date.toISOString(),
    annotations: annotationsObject,
    spans: spansObject,
    // threadName's own answer for a single fiber, without the set it builds for any id.
    fiberId: fiberId._tag === "Runtime" ? `#${fiberId.id}` : FiberId.threadName(fiberId)
  })
})
