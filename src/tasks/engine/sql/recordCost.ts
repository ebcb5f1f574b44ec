import type { SqlClient } from "@effect/sql"
import type { AttemptCost } from "../AttemptCost.ts"

/**
 * An attempt's usage, cost and whether its provider bills it (migration 24),
 * written once: the first account of an attempt's cost stands (a success
 * whose result is then refused by our own checks was still made and billed),
 * and a row comes back only when this write set it, so the cost is counted in
 * `mtg_upstream_cost_total` once however many steps report it.
 */
export const recordCost = (
  sql: SqlClient.SqlClient,
  attempt: { readonly taskId: string; readonly attempt: number },
  cost: AttemptCost
) =>
  sql<{ readonly billed: boolean; readonly cost_micros: number | string | null }>`
    UPDATE task_attempts SET usage = ${cost.usage === null ? null : JSON.stringify(cost.usage)}::jsonb,
      cost_micros = ${cost.costMicros}, billed = ${cost.billed}
    WHERE task_id = ${attempt.taskId} AND attempt = ${attempt.attempt} AND billed IS NULL
    RETURNING billed, cost_micros`
