import type { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/** Tasks of one channel in one engine state; `oldest` is when the oldest became due (ms), where it is due. */
export interface StateCount {
  readonly state: string
  readonly channel: string
  readonly count: number
  readonly oldest: number | null
}

/**
 * The engine's tasks that are not done, counted by state and channel, for the
 * metrics gauges (read at every scrape, so every replica answers alike). Each
 * part reads one of the engine's partial indexes, never the done tasks. A
 * queued task is due from its creation; a waiting one from its `run_at` (its
 * next poll), when that has passed.
 */
export const engineGauges = (sql: SqlClient.SqlClient, now: number) =>
  Effect.map(
    sql<{ state: string; channel: string; count: number; oldest: number | string | null }>`
      SELECT 'available' AS state, channel, count(*)::int AS count, min(created_at)::float8 * 1000 AS oldest
        FROM tasks WHERE status = 'queued' GROUP BY channel
      UNION ALL
      SELECT run_state, channel, count(*)::int,
          min(run_at) FILTER (WHERE run_state = 'waiting' AND run_at <= ${now})::float8
        FROM tasks WHERE run_state IN ('running', 'waiting', 'polling') GROUP BY run_state, channel
      UNION ALL
      SELECT 'storing', channel, count(*)::int, NULL FROM tasks WHERE run_state = 'storing' GROUP BY channel`,
    (rows): ReadonlyArray<StateCount> =>
      rows.map((r) => ({ ...r, count: Number(r.count), oldest: r.oldest === null ? null : Number(r.oldest) }))
  )
