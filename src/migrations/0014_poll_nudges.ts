/**
 * Upstream callbacks hasten polls (docs/adapters/README.md, Upstream
 * callbacks): `polling` marks a waiting task a poller holds right now (its
 * `run_at` is then the hold, not the next poll, so a callback must not move
 * it); `nudged` records a callback that arrived meanwhile, so the poll that
 * ends reschedules the task at once instead of after its backoff.
 */
export default [
  `ALTER TABLE tasks ADD COLUMN polling boolean NOT NULL DEFAULT false`,
  `ALTER TABLE tasks ADD COLUMN nudged boolean NOT NULL DEFAULT false`,
  `CREATE INDEX tasks_waiting_upstream ON tasks (channel, upstream_id) WHERE run_state = 'waiting'`
]
