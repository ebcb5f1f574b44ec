/**
 * Webhook subscriptions (docs/webhooks.md, Subscriptions, Disabled for
 * failing, Replay): the account's webhook may name the event types it wants
 * (`webhook_event_types`, null for all); an event of another type is
 * recorded `filtered`, never sent. A webhook whose deliveries have failed
 * without a success since `webhook_failing_since` (ms) for longer than
 * `WEBHOOK_DISABLE_AFTER_S` is disabled, with its reason and time; the events
 * written meanwhile, and those it was still trying, are kept `held`, to be
 * delivered when it is enabled again. Any window of events may be replayed,
 * same ids (`webhook_events_created`).
 */
export default [
  `ALTER TABLE accounts ADD COLUMN webhook_event_types text[],
    ADD COLUMN webhook_failing_since bigint,
    ADD COLUMN webhook_disabled_reason text,
    ADD COLUMN webhook_disabled_at bigint`,
  `ALTER TABLE webhook_events DROP CONSTRAINT webhook_events_status_check`,
  `ALTER TABLE webhook_events ADD CONSTRAINT webhook_events_status_check
    CHECK (status IN ('pending', 'delivered', 'failed', 'skipped', 'filtered', 'held'))`,
  `CREATE INDEX webhook_events_held ON webhook_events (account_id) WHERE status = 'held'`,
  `CREATE INDEX webhook_events_created ON webhook_events (account_id, created_at)`
]
