/**
 * A caller's deadline (`Cancel-After` on a create, docs/api.md): `cancel_at`
 * is when the task, still not terminal, is ended as by a cancel (ms). The
 * engine's deadline sweep finds due ones through the partial index, which
 * holds only unfinished tasks that have one.
 */
export default [
  `ALTER TABLE tasks ADD COLUMN cancel_at bigint`,
  `CREATE INDEX tasks_deadline ON tasks (cancel_at) WHERE cancel_at IS NOT NULL AND run_state <> 'done'`
]
