/**
 * A result that exists is never failed because object storage is away
 * (docs/engine.md, "When object storage is away"). `store_since` (ms) is when
 * storing a task's result first failed; the wait ends `outage_grace_s` after
 * it. A result an upstream still holds waits there (the task stays
 * `waiting` and is polled, downloaded and stored again); a result that exists
 * only in this service (a render of the sandbox, a synchronous upstream's
 * answer) waits in a spool directory: the task is `storing`, no lease and no
 * fiber, `spool_id` names the directory and `spool` lists its files.
 */
export default [
  `ALTER TABLE tasks DROP CONSTRAINT tasks_run_state_check`,
  `ALTER TABLE tasks ADD CONSTRAINT tasks_run_state_check
    CHECK (run_state IN ('available', 'running', 'waiting', 'storing', 'done'))`,
  `ALTER TABLE tasks ADD COLUMN store_since bigint`,
  `ALTER TABLE tasks ADD COLUMN spool_id text`,
  `ALTER TABLE tasks ADD COLUMN spool jsonb`,
  `CREATE INDEX tasks_storing ON tasks (spool_id, run_at) WHERE run_state = 'storing'`
]
