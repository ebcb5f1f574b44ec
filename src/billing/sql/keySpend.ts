import type { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/** A UTC day's number (days since the epoch), as `key_spend` counts them. */
export const dayOf = (seconds: number) => Math.floor(seconds / 86_400)

/** The first day of the UTC month of `seconds`. */
export const monthStartOf = (seconds: number) => {
  const date = new Date(seconds * 1000)
  return dayOf(Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1) / 1000)
}

/** When the UTC month after the one of `seconds` starts (seconds). */
export const nextMonthStart = (seconds: number) => {
  const date = new Date(seconds * 1000)
  return Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + 1, 1) / 1000
}

/** What keys spent today and this month (UTC), net of refunds, in micro-credits; keys that spent nothing are left out. */
export const keySpend = (sql: SqlClient.SqlClient, keyIds: ReadonlyArray<string>, now: number) =>
  keyIds.length === 0
    ? Effect.succeed(new Map<string, { today: number; month: number }>())
    : Effect.map(
      sql<{ key_id: string; today: number; month: number }>`
        SELECT key_id, coalesce(sum(spent_micros) FILTER (WHERE day = ${dayOf(now)}), 0)::bigint AS today,
          sum(spent_micros)::bigint AS month
        FROM key_spend WHERE ${sql.in("key_id", keyIds)} AND day >= ${monthStartOf(now)}
        GROUP BY key_id`,
      (rows) => new Map(rows.map((r) => [r.key_id, { today: Number(r.today), month: Number(r.month) }]))
    )
