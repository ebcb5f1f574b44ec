// Bundled and run by scripts/build.mjs (not part of the service): applies the
// service's migrations to the PGlite data directory the build makes, so a
// fresh DATA_DIR starts from a copy that is already migrated.
import { Effect, Logger, LogLevel } from "effect"
import { migrate } from "../src/platform/Database.ts"
import * as PgliteClient from "../src/platform/PgliteClient.ts"

/** Runs `migrate` (the service's own) on the database in `dataDir`; the number of migrations applied. */
export const migrateDataDir = (dataDir: string): Promise<number> =>
  Effect.runPromise(
    migrate.pipe(
      Effect.provide(PgliteClient.layer({ dataDir })),
      // The build prints its own one line; the per-migration log lines are for a service's start.
      Logger.withMinimumLogLevel(LogLevel.Warning)
    )
  )
