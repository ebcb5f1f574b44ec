import type { SqlClient } from "@effect/sql"

/** What `charge_task` (migration 23) answers: the outcome and what the caller needs to say why. */
export interface ChargeRow {
  readonly outcome: "charged" | "insufficient_balance" | "queue_full" | "spend_limit"
  readonly wallet: number
  readonly subscription: number
  readonly from_subscription: number
  readonly queued: number
  readonly group_name: string
  readonly spent_today: number
  readonly spent_month: number
  readonly daily_limit: number | null
  readonly monthly_limit: number | null
  readonly balance_low: boolean
}

/**
 * The pre-charge of a new task in one round trip: the account locked, then
 * each check and write a statement of its own under that lock (the function
 * says which), so none waits again once the lock is held. `queuedLimits` is
 * each group's `max_queued` as JSON.
 */
export const chargeTask = (
  sql: SqlClient.SqlClient,
  charge: {
    readonly accountId: string
    readonly keyId: string
    readonly taskId: string
    readonly ledgerId: string
    readonly micros: number
    readonly useSubscription: boolean
    readonly now: number
    readonly queuedLimits: string
  }
) =>
  sql<ChargeRow>`SELECT * FROM charge_task(${charge.accountId}, ${charge.keyId}, ${charge.taskId}, ${charge.ledgerId},
    ${charge.micros}::bigint, ${charge.useSubscription}::boolean, ${charge.now}::bigint, ${charge.queuedLimits}::jsonb)`
