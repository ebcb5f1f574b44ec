// Runs once: no database (left out of the PostgreSQL pass, vitest.config.ts).
import { Cause, Effect, Logger } from "effect"
import { describe, expect, it } from "vitest"
import { jsonLineLogger } from "../../src/platform/JsonLogLine.ts"

/** Runs `program` with a logger that formats every log call both ways; the pairs it saw. */
const bothWays = (program: Effect.Effect<unknown>) => {
  const lines: Array<{ readonly fast: string; readonly reference: string }> = []
  const both = Logger.make((options) => {
    lines.push({ fast: jsonLineLogger.log(options), reference: Logger.jsonLogger.log(options) })
  })
  Effect.runSync(Effect.provide(program, Logger.replace(Logger.defaultLogger, both)))
  return lines
}

describe("jsonLineLogger", () => {
  it("writes Logger.jsonLogger's line, byte for byte, for plain and other lines alike", () => {
    const lines = bothWays(Effect.gen(function*() {
      // The access log line: the common case the direct path serves.
      yield* Effect.logInfo("request").pipe(
        Effect.annotateLogs({ method: "GET", path: "/v1/video/tasks/task_1", status: 200, duration_ms: 3 }),
        Effect.annotateLogs("request_id", "req_abc")
      )
      yield* Effect.logWarning("plain values", "and a second part")
      yield* Effect.logWarning("edge values").pipe(
        Effect.annotateLogs({ nothing: null, missing: undefined, no: false, nan: Number.NaN, quote: "a \"b\"\n\u2028" })
      )
      yield* Effect.logInfo("in spans").pipe(Effect.withLogSpan("outer"), Effect.withLogSpan("inner"))
      yield* Effect.logError("failed", Cause.fail(new Error("boom")))
      yield* Effect.logInfo("with an object").pipe(Effect.annotateLogs({ detail: { a: [1, 2], b: "c" } }))
      yield* Effect.logInfo("with a bigint").pipe(Effect.annotateLogs("big", 12n))
      yield* Effect.logInfo(new Error("an error as the message"))
      yield* Effect.logInfo({ not: "a string" })
    }))
    expect(lines).toHaveLength(9)
    for (const { fast, reference } of lines) expect(fast).toBe(reference)
    expect(JSON.parse(lines[0]!.fast)).toMatchObject({
      message: "request",
      logLevel: "INFO",
      annotations: { method: "GET", status: 200, duration_ms: 3, request_id: "req_abc" }
    })
    expect(Object.keys(JSON.parse(lines[3]!.fast).spans).sort()).toEqual(["inner", "outer"])
  })
})
