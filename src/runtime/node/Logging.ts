import { Logger } from "effect"
import { jsonLineLogger } from "../../platform/JsonLogLine.ts"

/**
 * The same JSON lines as `Logger.json` (platform/JsonLogLine.ts), written in
 * batches. Writes to a pipe are synchronous on Linux, and console.log made
 * one write(2) per line: one per request for the access log. Lines are
 * collected and written together once the current I/O callbacks have run, in
 * order; whatever is pending is written synchronously when the process exits.
 */
let pending: Array<string> = []
let scheduled = false

const flush = () => {
  scheduled = false
  if (pending.length === 0) return
  const out = pending.join("\n") + "\n"
  pending = []
  process.stdout.write(out)
}

process.on("exit", flush)

const batched = Logger.map(jsonLineLogger, (line) => {
  pending.push(line)
  if (!scheduled) {
    scheduled = true
    setImmediate(flush)
  }
})

export const JsonLogLive = Logger.replace(Logger.defaultLogger, batched)
