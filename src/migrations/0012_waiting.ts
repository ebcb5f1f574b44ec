/**
 * The engine's internal run state, apart from the public status
 * (docs/engine.md, States): `available` (claimable), `running` (claimed,
 * leased), `waiting` (submitted upstream: no lease, no fiber; polled at
 * `run_at`) and `done`. A waiting task keeps its upstream id, upstream model
 * and submit time, so a restart resumes polling and nothing is resubmitted.
 * `task_attempts` keeps every attempt's channel, upstream id and last upstream
 * answer for operators (admin task view); callers never see it.
 */
export default [
  `ALTER TABLE tasks ADD COLUMN run_state text NOT NULL DEFAULT 'available'
    CHECK (run_state IN ('available', 'running', 'waiting', 'done'))`,
  `UPDATE tasks SET run_state = CASE status WHEN 'queued' THEN 'available' WHEN 'in_progress' THEN 'running' ELSE 'done' END`,
  `ALTER TABLE tasks ADD COLUMN run_at bigint`,
  `ALTER TABLE tasks ADD COLUMN upstream_id text`,
  `ALTER TABLE tasks ADD COLUMN upstream_model text`,
  `ALTER TABLE tasks ADD COLUMN submitted_at bigint`,
  `ALTER TABLE tasks ADD COLUMN polls integer NOT NULL DEFAULT 0`,
  `CREATE INDEX tasks_waiting ON tasks (channel, run_at) WHERE run_state = 'waiting'`,
  `CREATE TABLE task_attempts (
    task_id text NOT NULL REFERENCES tasks (id),
    attempt integer NOT NULL,
    channel text NOT NULL,
    upstream_id text,
    outcome text NOT NULL,
    last_answer jsonb,
    created_at bigint NOT NULL,
    updated_at bigint NOT NULL,
    PRIMARY KEY (task_id, attempt)
  )`
]
