import { Effect, Schedule } from "effect"
import { AppConfig } from "../services/AppConfig.ts"
import { UploadSweep } from "../services/UploadSweep.ts"

/**
 * Removes expired uploads every `uploads.sweep_interval_s`, starting at once.
 * Every worker process runs one; their claims never overlap, so more
 * replicas only share the work.
 */
export const uploadSweeper = Effect.gen(function*() {
  const uploads = yield* UploadSweep
  const { limits } = yield* AppConfig

  const pass = uploads.sweep.pipe(
    Effect.tap((removed) =>
      removed.sessions + removed.confirmed + removed.images === 0
        ? Effect.void
        : Effect.logInfo("expired uploads removed").pipe(Effect.annotateLogs({ ...removed }))
    ),
    Effect.catchAllCause((cause) => Effect.logError("upload sweep failed", cause))
  )

  yield* Effect.repeat(pass, Schedule.spaced(`${limits.uploads.sweep_interval_s} seconds`))
})
