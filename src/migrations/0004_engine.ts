/**
 * The task row as the queue item of the task engine (docs/engine.md, Claims,
 * leases and the reaper): the attempt number every write of a claim is guarded
 * by, the lease a heartbeat extends and the reaper takes back, the channel that
 * bounds concurrency, and the trace context of the create request. Result files
 * are assets; terminal events wait in the outbox.
 */
export default [
  `ALTER TABLE tasks ADD COLUMN channel text NOT NULL DEFAULT 'sandbox'`,
  `ALTER TABLE tasks ADD COLUMN attempt integer NOT NULL DEFAULT 0`,
  `ALTER TABLE tasks ADD COLUMN lease_owner text`,
  `ALTER TABLE tasks ADD COLUMN lease_expires_at bigint`,
  `ALTER TABLE tasks ADD COLUMN trace_context jsonb`,
  `ALTER TABLE tasks ADD COLUMN refunded_at bigint`,
  `CREATE INDEX tasks_queue ON tasks (channel, created_at, id) WHERE status = 'queued'`,
  `CREATE INDEX tasks_leases ON tasks (lease_expires_at) WHERE status = 'in_progress'`,
  `CREATE TABLE assets (
    id text PRIMARY KEY,
    account_id text NOT NULL REFERENCES accounts (id),
    task_id text NOT NULL REFERENCES tasks (id),
    storage_key text NOT NULL,
    mime_type text NOT NULL,
    filename text NOT NULL,
    size_bytes bigint NOT NULL,
    width integer,
    height integer,
    duration_ms integer,
    created_at bigint NOT NULL
  )`,
  `CREATE INDEX assets_task ON assets (task_id)`,
  `ALTER TABLE webhook_events ADD COLUMN task_id text`,
  `ALTER TABLE webhook_events DROP CONSTRAINT webhook_events_status_check`,
  `ALTER TABLE webhook_events ADD CONSTRAINT webhook_events_status_check
    CHECK (status IN ('pending', 'delivered', 'failed', 'skipped'))`,
  `CREATE UNIQUE INDEX webhook_events_task_type ON webhook_events (task_id, type) WHERE task_id IS NOT NULL`
]
