import type { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/** An account group's tasks on one channel: queued there, and in flight there. */
export interface GroupLoad {
  readonly group: string
  readonly channel: string
  readonly queued: number
  readonly inFlight: number
}

/**
 * The active lanes (`task_lanes`, migration 21) summed by the accounts'
 * group and channel, for the metrics gauges: a row per active account read,
 * never a task, and never an account id in what comes out.
 */
export const laneGauges = (sql: SqlClient.SqlClient) =>
  Effect.map(
    sql<{ group_name: string; channel: string; queued: number; in_flight: number }>`
      SELECT a.group_name, l.channel, sum(l.queued)::int AS queued, sum(l.in_flight)::int AS in_flight
      FROM task_lanes l JOIN accounts a ON a.id = l.account_id
      WHERE l.queued > 0 OR l.in_flight > 0
      GROUP BY a.group_name, l.channel`,
    (rows): ReadonlyArray<GroupLoad> =>
      rows.map((r) => ({
        group: r.group_name,
        channel: r.channel,
        queued: Number(r.queued),
        inFlight: Number(r.in_flight)
      }))
  )
