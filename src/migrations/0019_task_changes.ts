/**
 * Live status (docs/api.md, Live status): every change of a task's `status`
 * or `progress`, by whichever writer (the engine's steps, a refund, an
 * operator's action), bumps the row's `change_seq` and sends its id on the
 * `task_changed` NOTIFY channel. The sequence is the event id of the task's
 * stream (it only grows), the notification wakes the streams and long polls
 * of every replica. A trigger rather than each writer, so no path that ends
 * or moves a task can forget it. The NOTIFY goes out at the writer's commit;
 * those writes are a handful per task, unlike creates, which never NOTIFY
 * inside their transaction.
 */
export default [
  `ALTER TABLE tasks ADD COLUMN change_seq integer NOT NULL DEFAULT 0`,
  `CREATE FUNCTION tasks_changed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      NEW.change_seq := OLD.change_seq + 1;
      PERFORM pg_notify('task_changed', NEW.id);
      RETURN NEW;
    END
  $$`,
  `CREATE TRIGGER tasks_changed BEFORE UPDATE OF status, progress ON tasks FOR EACH ROW
    WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.progress IS DISTINCT FROM NEW.progress)
    EXECUTE FUNCTION tasks_changed()`
]
