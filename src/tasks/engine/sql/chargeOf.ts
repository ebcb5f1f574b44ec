import type { SqlClient } from "@effect/sql"

/**
 * What the create took for a task (fixed once the task exists), read without
 * locking the task, so a failure can refund it before it takes the task's
 * row: an account row is always locked before task rows (migration 21 says
 * why), and a create of the same account holds the account while its INSERT
 * waits on the lanes that this task's failure will lock.
 */
export const chargeOf = (sql: SqlClient.SqlClient, id: string) =>
  sql<{ charged_wallet_micros: number; charged_subscription_micros: number }>`
    SELECT charged_wallet_micros, charged_subscription_micros FROM tasks WHERE id = ${id}`
