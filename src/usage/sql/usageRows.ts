import type { SqlClient } from "@effect/sql"
import type { GroupKey, UsageQuery } from "../UsageQuery.ts"

/** Each key as a column of `usage_daily`. */
const COLUMNS: Record<GroupKey, string> = { day: "day", account: "account_id", model: "model", channel: "channel" }

/**
 * The usage report's rows (docs/operating.md, Money): the window's days of
 * `usage_daily` (migration 25, kept by triggers as tasks are charged and
 * refunded and attempts' costs recorded) summed by the query's keys, in key
 * order, after the cursor. A row per day and group of the window is read,
 * through the table's key, whatever the history holds. The window counts
 * whole UTC days: from the day of `from` to the day `to` falls in (that day
 * excluded when `to` is its midnight). Without keys, one row of totals.
 */
export const usageRows = (sql: SqlClient.SqlClient, query: UsageQuery) => {
  const keys = query.groupBy
  const select = keys.length === 0 ? "1 AS total" : keys.map((k) => `${COLUMNS[k]} AS ${k}`).join(", ")
  const order = keys.length === 0 ? "1" : keys.map((_, i) => String(i + 1)).join(", ")
  const after = query.after === undefined || keys.length === 0
    ? sql``
    : sql`HAVING (${sql.literal(keys.map((k) => COLUMNS[k]).join(", "))}) > (${
      sql.csv(query.after.map((v, i) => keys[i] === "day" ? sql`${v}::integer` : sql`${v}::text`))
    })`
  return sql<
    Record<string, unknown> & { tasks: number; charged: number; refunded: number; cost: number; billed: number }
  >`
    SELECT ${sql.literal(select)}, sum(tasks)::bigint AS tasks, sum(charged_micros)::bigint AS charged,
      sum(refunded_micros)::bigint AS refunded, sum(cost_micros)::bigint AS cost, sum(billed)::bigint AS billed
    FROM usage_daily
    WHERE day >= ${Math.floor(query.from / 86_400)} AND day < ${Math.ceil(query.to / 86_400)}
    GROUP BY ${sql.literal(order)}
    ${after}
    ORDER BY ${sql.literal(order)}
    LIMIT ${query.limit + 1}`
}
