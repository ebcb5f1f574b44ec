import type { SqlClient } from "@effect/sql"

/** What the pre-charge took from each balance, kept with the task so a failure refunds exactly that. */
export const recordCharge = (
  sql: SqlClient.SqlClient,
  id: string,
  split: { readonly walletMicros: number; readonly subscriptionMicros: number }
) =>
  sql`
    UPDATE tasks SET charged_wallet_micros = ${split.walletMicros},
      charged_subscription_micros = ${split.subscriptionMicros}
    WHERE id = ${id}`
