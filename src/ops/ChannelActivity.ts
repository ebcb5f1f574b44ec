import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/** The window of a channel's recent counts and times. */
const RECENT_S = 15 * 60
/** A replica's breaker report older than this is left out: the replica stopped or lost its database. */
const BREAKER_REPORT_MAX_AGE_MS = 60_000

/** The attempt outcomes that are failures of the attempt itself (failover is counted apart). */
const FAILED = ["failed", "refused", "ambiguous", "deadline", "no_output", "fetch_failed", "storage_unavailable"]

/**
 * What the database knows of these channels' recent work at `now` (ms): the
 * load, the last 15 minutes' attempts and times to result, each channel's
 * last upstream answer and the replicas' breaker reports. Each read is
 * bounded by its window through an index (migration 20), so its cost does
 * not grow with the history kept (bench/recent-windows.ts).
 */
export const channelActivity = (names: ReadonlyArray<string>, now: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const since = Math.floor(now / 1000) - RECENT_S

    const load = yield* sql<{ channel: string; in_flight: number; queued: number }>`
      SELECT channel,
        count(*) FILTER (WHERE run_state IN ('running', 'waiting', 'polling'))::int AS in_flight,
        count(*) FILTER (WHERE status = 'queued')::int AS queued
      FROM tasks WHERE channel IN ${sql.in(names)} AND status IN ('queued', 'in_progress') GROUP BY channel`
    const attempts = yield* sql<
      { channel: string; submitted: number; succeeded: number; failed: number; failed_over: number }
    >`
      SELECT channel, count(*)::int AS submitted,
        count(*) FILTER (WHERE outcome = 'succeeded')::int AS succeeded,
        count(*) FILTER (WHERE outcome IN ${sql.in(FAILED)})::int AS failed,
        count(*) FILTER (WHERE outcome = 'failover')::int AS failed_over
      FROM task_attempts
      -- updated_at never precedes created_at: its bound changes nothing but lets task_attempts_recent serve the read.
      WHERE channel IN ${sql.in(names)} AND updated_at >= ${since} AND created_at >= ${since}
      GROUP BY channel`
    const times = yield* sql<{ channel: string; p50: number | null; p95: number | null }>`
      SELECT channel,
        percentile_cont(0.5) WITHIN GROUP (ORDER BY (completed_at - created_at) * 1000) AS p50,
        percentile_cont(0.95) WITHIN GROUP (ORDER BY (completed_at - created_at) * 1000) AS p95
      FROM tasks WHERE channel IN ${sql.in(names)} AND status = 'succeeded' AND completed_at >= ${since}
      GROUP BY channel`
    // The last answer of each channel: one lookup of task_attempts_upstream_answer per channel, however long the
    // history (a DISTINCT ON over every answer ever kept read them all).
    const errors = names.length === 0 ? [] : yield* sql<
      { channel: string; at: number; status: number | null; code: string | null; message: string | null }
    >`
      ${
      sql.join(" UNION ALL ", false)(names.map((name) =>
        sql`(SELECT channel, updated_at AS at, upstream_status AS status, upstream_code AS code,
          upstream_message AS message
        FROM task_attempts WHERE channel = ${name} AND (upstream_status IS NOT NULL OR upstream_code IS NOT NULL)
        ORDER BY updated_at DESC LIMIT 1)`
      ))
    }`
    const breakers = yield* sql<{ channel: string; replica: string; open_until: number; reported_at: number }>`
      SELECT channel, replica, open_until, reported_at FROM channel_breakers
      WHERE channel IN ${sql.in(names)} AND reported_at >= ${now - BREAKER_REPORT_MAX_AGE_MS}
      ORDER BY channel, replica`

    return { load, attempts, times, errors, breakers }
  })
