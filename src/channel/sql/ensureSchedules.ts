import type { SqlClient } from "@effect/sql"

/**
 * The rows of a channel's schedules, made when a replica first paces the
 * channel (the first to come makes them; the rest find them). A new row's
 * next slot is free at once.
 */
export const ensureSchedules = (sql: SqlClient.SqlClient, channel: string, schedules: ReadonlyArray<string>) =>
  sql`
    INSERT INTO upstream_budgets ${
    sql.insert(schedules.map((schedule) => ({ channel, schedule, next_at: 0, factor: 1, lowered_at: 0 })))
  }
    ON CONFLICT (channel, schedule) DO NOTHING`
