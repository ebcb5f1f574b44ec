/**
 * Webhook delivery (docs/webhooks.md, Delivery): the outbox row becomes a
 * delivery job with a lease, and every attempt gets a row of its own.
 *
 * - `payload` turns from jsonb to json, which keeps the text as written (key
 *   order included), so every attempt sends the event exactly as recorded and
 *   `data.object` lists its fields in the order GET shows them.
 * - `next_attempt_at` turns from Unix seconds to milliseconds: retry
 *   intervals may be shorter than a second (tests) and a whole-second clock
 *   would let an attempt start up to a second early.
 * - `lease_owner`/`lease_expires_at` (ms): a claimed event is invisible to
 *   other workers until its lease ends; a sender that dies leaves the lease to
 *   expire and the event to be claimed again (at least once, never lost).
 * - `attempts` counts attempts started, `failures` the ones that ended with
 *   an error or a non-2xx answer (the schedule counts those).
 */
export default [
  `ALTER TABLE webhook_events ALTER COLUMN payload TYPE json USING payload::json`,
  `UPDATE webhook_events SET next_attempt_at = next_attempt_at * 1000`,
  `ALTER TABLE webhook_events ADD COLUMN failures integer NOT NULL DEFAULT 0`,
  `ALTER TABLE webhook_events ADD COLUMN lease_owner text`,
  `ALTER TABLE webhook_events ADD COLUMN lease_expires_at bigint`,
  `ALTER TABLE webhook_events ADD COLUMN completed_at bigint`,
  `CREATE INDEX webhook_events_account ON webhook_events (account_id, created_at DESC, id DESC)`,
  `CREATE TABLE webhook_attempts (
    event_id text NOT NULL REFERENCES webhook_events (id),
    attempt integer NOT NULL,
    account_id text NOT NULL REFERENCES accounts (id),
    worker_id text NOT NULL,
    url text,
    started_at bigint NOT NULL,
    duration_ms integer,
    status_code integer,
    error text,
    outcome text NOT NULL CHECK (outcome IN ('sending', 'delivered', 'failed', 'interrupted')),
    PRIMARY KEY (event_id, attempt)
  )`
]
