import type { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { RECOVERY_PER_S } from "../Pacing.ts"

/** A reserved slot, on the database's clock (ms), with that clock's reading and the rate factor it was spaced at. */
export interface Reservation {
  readonly slotAt: number
  readonly now: number
  readonly factor: number
}

/**
 * Reserves the next slot of a request in one statement: the rows of its
 * schedules are locked, the slot is the latest of their next free slots (or
 * now), and each row moves on by its own spacing at the channel's current
 * rate factor (climbing back from the last lowering by RECOVERY_PER_S of the
 * budget a second, Pacing.ts `currentFactor`). Times come from the
 * database's clock, so replicas whose clocks differ still share one
 * schedule. `rates` are the requests per second each schedule's slots are
 * spaced at when the channel's rate is the whole budget (headroom included,
 * Pacing.ts `spacingMs`), by name; `all` is always among them and holds the
 * factor.
 */
export const reserveSlot = (
  sql: SqlClient.SqlClient,
  channel: string,
  rates: ReadonlyArray<{ readonly name: string; readonly perSecond: number }>
) => {
  const names = rates.map((r) => r.name)
  const rateOf = sql`CASE schedule ${
    sql.join(" ", false)(rates.map((r) => sql`WHEN ${r.name} THEN ${r.perSecond}::float8`))
  } END`
  return sql<{ slot_at: number; now: number; factor: number }>`
    WITH clock AS (SELECT (extract(epoch FROM clock_timestamp()) * 1000)::float8 AS now),
    locked AS (
      SELECT schedule, next_at, factor, lowered_at FROM upstream_budgets
      WHERE channel = ${channel} AND ${sql.in("schedule", names)}
      -- In one order ('all' first, as lowerRate.ts locks it), so two statements never deadlock.
      ORDER BY schedule
      FOR UPDATE
    ),
    slot AS (
      SELECT greatest(clock.now, max(locked.next_at)) AS at, clock.now AS now,
        least(1, max(locked.factor) FILTER (WHERE locked.schedule = 'all')
          + ${RECOVERY_PER_S}::float8 * greatest(0, clock.now
            - max(locked.lowered_at) FILTER (WHERE locked.schedule = 'all')) / 1000) AS factor
      FROM locked, clock GROUP BY clock.now
    )
    UPDATE upstream_budgets SET next_at = slot.at + 1000 / (${rateOf} * slot.factor)
    FROM slot
    WHERE channel = ${channel} AND ${sql.in("schedule", names)}
    RETURNING slot.at AS slot_at, slot.now AS now, slot.factor AS factor`.pipe(
    Effect.map((rows): Reservation | undefined =>
      rows.length === 0
        ? undefined
        : { slotAt: Number(rows[0]!.slot_at), now: Number(rows[0]!.now), factor: Number(rows[0]!.factor) }
    )
  )
}
