/**
 * What operators see and steer of each channel (docs/operating.md, Channels):
 * - `task_attempts` keeps the upstream's own answer that ended an attempt:
 *   its HTTP status and its own code and message, as it sent them.
 * - `channel_states`: `enabled` (no row), `draining` or `disabled`, with the
 *   operator's reason, read by every replica so a change holds across
 *   restarts and reaches them all.
 * - `channel_breakers`: each replica's breaker of each channel, reported
 *   periodically, so the channel view shows every replica's.
 */
export default [
  `ALTER TABLE task_attempts ADD COLUMN upstream_status integer`,
  `ALTER TABLE task_attempts ADD COLUMN upstream_code text`,
  `ALTER TABLE task_attempts ADD COLUMN upstream_message text`,
  `CREATE INDEX task_attempts_recent ON task_attempts (channel, updated_at)`,
  `CREATE TABLE channel_states (
    channel text PRIMARY KEY,
    state text NOT NULL CHECK (state IN ('enabled', 'draining', 'disabled')),
    reason text,
    updated_at bigint NOT NULL
  )`,
  `CREATE TABLE channel_breakers (
    replica text NOT NULL,
    channel text NOT NULL,
    open_until bigint NOT NULL,
    reported_at bigint NOT NULL,
    PRIMARY KEY (replica, channel)
  )`
]
