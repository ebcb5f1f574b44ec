import type { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { currentFactor } from "../Pacing.ts"

/**
 * Every paced channel's rate factor now (1: the whole budget), as the last
 * throttling answer left it and climbing back since: for the metrics gauge
 * and the pollers, the same on every replica.
 */
export const budgetFactors = (sql: SqlClient.SqlClient) =>
  Effect.map(
    sql<{ channel: string; factor: number; lowered_at: number; now: number }>`
      SELECT channel, factor, lowered_at, (extract(epoch FROM clock_timestamp()) * 1000)::float8 AS now
      FROM upstream_budgets WHERE schedule = 'all'`,
    (rows) =>
      new Map(rows.map((r) => [r.channel, currentFactor(Number(r.factor), Number(r.lowered_at), Number(r.now))]))
  )
