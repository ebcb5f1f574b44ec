/**
 * What creating a task needs: the caller's Idempotency-Key with a digest of
 * the request it was first used with, and the pre-charge split between the
 * subscription and the wallet (so a refund can reverse it exactly).
 */
export default [
  `ALTER TABLE tasks ADD COLUMN idempotency_key text`,
  `ALTER TABLE tasks ADD COLUMN request_digest text`,
  `ALTER TABLE tasks ADD COLUMN charged_wallet_micros bigint NOT NULL DEFAULT 0`,
  `ALTER TABLE tasks ADD COLUMN charged_subscription_micros bigint NOT NULL DEFAULT 0`,
  `CREATE UNIQUE INDEX tasks_idempotency ON tasks (account_id, idempotency_key) WHERE idempotency_key IS NOT NULL`,
  `CREATE INDEX tasks_account_kind_status ON tasks (account_id, kind, status, created_at DESC, id DESC)`,
  `CREATE INDEX ledger_task ON ledger (task_id) WHERE task_id IS NOT NULL`
]
