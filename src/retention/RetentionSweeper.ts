import { Effect, Schedule } from "effect"
import { AppConfig } from "../platform/AppConfig.ts"
import { Redaction } from "./Redaction.ts"
import { ResultSweep } from "./ResultSweep.ts"

/**
 * Every `retention.sweep_interval_s`, starting at once: results past their
 * group's retention removed, ended requests of minimising groups redacted.
 * Every worker process runs one; their claims never overlap, so more
 * replicas only share the work. A pass that fails is logged and the next
 * one starts over where the database says.
 */
export const retentionSweeper = Effect.gen(function*() {
  const results = yield* ResultSweep
  const redaction = yield* Redaction
  const { groups, limits } = yield* AppConfig
  const needed = Object.values(groups.groups).some((g) =>
    g.result_retention_days !== undefined || g.redact_requests === true
  )
  // Nothing to keep short: no pass at all (the default, today's behaviour).
  if (!needed) return

  const pass = Effect.all([results.sweep, redaction.sweep]).pipe(
    Effect.tap(([swept, redacted]) =>
      swept.objects + redacted.tasks + redacted.forgotten === 0
        ? Effect.void
        : Effect.logInfo("retention sweep").pipe(
          Effect.annotateLogs({
            results_swept: swept.objects,
            bytes_swept: swept.bytes,
            requests_redacted: redacted.tasks,
            provider_copies_deleted: redacted.forgotten
          })
        )
    ),
    Effect.catchAllCause((cause) => Effect.logError("retention sweep failed", cause))
  )
  yield* Effect.repeat(pass, Schedule.spaced(`${limits.retention.sweep_interval_s} seconds`))
})
