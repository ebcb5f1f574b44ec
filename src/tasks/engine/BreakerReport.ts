import { SqlClient } from "@effect/sql"
import { Clock, Effect, Schedule } from "effect"
import { randomBase62 } from "../../platform/Ids.ts"
import { Breakers } from "./Breakers.ts"

/** How often a replica reports its breakers; the channel view leaves out reports a minute old. */
const EVERY = "5 seconds"

/**
 * Reports this replica's breaker of each channel it works to the database
 * (`channel_breakers`), so the channel view, on any replica, shows every
 * replica's breakers. The breakers themselves stay per process (Breakers.ts).
 */
export const breakerReport = (channels: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const breakers = yield* Breakers
    const replica = `rep_${randomBase62(10)}`
    const report = Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      for (const channel of channels) {
        yield* sql`
          INSERT INTO channel_breakers (replica, channel, open_until, reported_at)
          VALUES (${replica}, ${channel}, ${breakers.openUntil(channel)}, ${now})
          ON CONFLICT (replica, channel) DO UPDATE SET open_until = EXCLUDED.open_until,
            reported_at = EXCLUDED.reported_at`
      }
    })
    yield* report.pipe(
      Effect.catchAll((e) => Effect.logWarning("reporting the breakers failed", e)),
      Effect.repeat(Schedule.spaced(EVERY))
    )
  })
