/**
 * The engine's state in one column (docs/engine.md, States): a waiting task
 * that a poller holds right now is `polling` (its `run_at` the end of the
 * hold), where it was `waiting` with a `polling` flag beside it. The indexes
 * of tasks waiting upstream take both states.
 */
export default [
  `ALTER TABLE tasks DROP CONSTRAINT tasks_run_state_check`,
  `UPDATE tasks SET run_state = 'polling' WHERE run_state = 'waiting' AND polling`,
  `ALTER TABLE tasks ADD CONSTRAINT tasks_run_state_check
    CHECK (run_state IN ('available', 'running', 'waiting', 'polling', 'storing', 'done'))`,
  `ALTER TABLE tasks DROP COLUMN polling`,
  `DROP INDEX tasks_in_flight`,
  `CREATE INDEX tasks_in_flight ON tasks (channel) WHERE run_state IN ('running', 'waiting', 'polling')`,
  `DROP INDEX tasks_waiting`,
  `CREATE INDEX tasks_waiting ON tasks (channel, run_at) WHERE run_state IN ('waiting', 'polling')`,
  `DROP INDEX tasks_waiting_upstream`,
  `CREATE INDEX tasks_waiting_upstream ON tasks (channel, upstream_id) WHERE run_state IN ('waiting', 'polling')`
]
