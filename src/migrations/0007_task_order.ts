/**
 * Exact creation order for the lists that page newest first (tasks and
 * webhook events). `created_at` has one-second resolution and ids are random,
 * so rows created within one second had no order: "newest first" was wrong
 * and `after` could return rows not older than the cursor. A sequence gives
 * every row a strictly increasing position at insert; existing rows are
 * numbered in their old order (created_at, id).
 */
const addSequence = (table: string) => [
  `CREATE SEQUENCE ${table}_seq AS bigint`,
  `ALTER TABLE ${table} ADD COLUMN seq bigint`,
  `UPDATE ${table} SET seq = ordered.n
     FROM (SELECT id, nextval('${table}_seq') AS n FROM (SELECT id FROM ${table} ORDER BY created_at, id) AS o) AS ordered
    WHERE ${table}.id = ordered.id`,
  `ALTER TABLE ${table} ALTER COLUMN seq SET DEFAULT nextval('${table}_seq')`,
  `ALTER TABLE ${table} ALTER COLUMN seq SET NOT NULL`,
  `ALTER SEQUENCE ${table}_seq OWNED BY ${table}.seq`
]

export default [
  ...addSequence("tasks"),
  `DROP INDEX tasks_account_kind_created`,
  `DROP INDEX tasks_account_kind_status`,
  `CREATE INDEX tasks_account_kind_seq ON tasks (account_id, kind, seq DESC)`,
  `CREATE INDEX tasks_account_kind_status_seq ON tasks (account_id, kind, status, seq DESC)`,
  // The queue is claimed oldest first in the same exact order.
  `DROP INDEX tasks_queue`,
  `CREATE INDEX tasks_queue ON tasks (channel, seq) WHERE status = 'queued'`,
  ...addSequence("webhook_events"),
  `DROP INDEX webhook_events_account`,
  `CREATE INDEX webhook_events_account ON webhook_events (account_id, seq DESC)`
]
