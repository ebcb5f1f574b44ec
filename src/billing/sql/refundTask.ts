import type { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * A task's refund: the balances given back (and the account's low-balance
 * flag down again once its wallet is back at or above the threshold), the
 * ledger's refund written, and the charge taken off the spend of the key
 * and day that made it (found from the task's charge entry). The account's
 * row first, as every writer takes it (migration 21, lock order).
 */
export const refundTask = (
  sql: SqlClient.SqlClient,
  refund: {
    readonly accountId: string
    readonly taskId: string
    readonly ledgerId: string
    readonly walletMicros: number
    readonly subscriptionMicros: number
    readonly now: number
  }
) =>
  Effect.all([
    sql`
      UPDATE accounts
      SET wallet_micros = wallet_micros + ${refund.walletMicros},
          subscription_micros = subscription_micros + ${refund.subscriptionMicros},
          low_balance_notified = low_balance_notified
            AND wallet_micros + ${refund.walletMicros} < coalesce(low_balance_micros, 0),
          updated_at = ${refund.now}
      WHERE id = ${refund.accountId}`,
    sql`
      UPDATE key_spend s SET spent_micros = s.spent_micros - ${refund.walletMicros + refund.subscriptionMicros}
      FROM ledger c
      WHERE c.task_id = ${refund.taskId} AND c.kind = 'charge' AND c.key_id IS NOT NULL
        AND s.key_id = c.key_id AND s.day = (c.created_at / 86400)::integer`,
    sql`
      INSERT INTO ledger (id, account_id, task_id, kind, wallet_micros, subscription_micros, created_at)
      VALUES (${refund.ledgerId}, ${refund.accountId}, ${refund.taskId}, 'refund', ${refund.walletMicros},
        ${refund.subscriptionMicros}, ${refund.now})`
  ], { discard: true })
