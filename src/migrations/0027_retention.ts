/**
 * Result retention and data minimisation (docs/operating.md, Retention and
 * Data minimisation).
 *
 * - An asset past its group's `result_retention_days` is swept: a sweeper
 *   claims it (`sweep_lease_until`), removes its object, then marks it
 *   `expired_at` under that same lease, so a sweeper that dies in between
 *   leaves the row to the next one and none is counted twice. The partial
 *   index holds only the assets still kept, by account and age: a sweep
 *   reads the accounts of one group, never the results of the others.
 * - `asset_totals` keeps the objects and bytes kept, in 16 rows picked by
 *   the asset id's hash (one row would make concurrent completions queue on
 *   its lock), for the gauges; kept by triggers as assets come and go.
 * - A task of a minimising group is redacted once it ended (`redacted_at`);
 *   the index holds the ended tasks not redacted yet, by account.
 * - `upstream_forget`: an attempt whose provider copy is to be deleted
 *   (`pending`), was (`deleted`), or could not be (`failed`); the lease
 *   keeps two sweepers off one attempt.
 */
export default [
  `ALTER TABLE assets ADD COLUMN expired_at bigint, ADD COLUMN sweep_lease_until bigint`,
  `CREATE INDEX assets_kept ON assets (account_id, created_at) WHERE expired_at IS NULL AND deleted_at IS NULL`,
  `CREATE TABLE asset_totals (
    shard smallint PRIMARY KEY,
    objects bigint NOT NULL DEFAULT 0,
    bytes bigint NOT NULL DEFAULT 0
  )`,
  `INSERT INTO asset_totals (shard, objects, bytes)
    SELECT s, coalesce(count(a.id), 0), coalesce(sum(a.size_bytes), 0)
    FROM generate_series(0, 15) s
    LEFT JOIN assets a ON (hashtext(a.id) & 15) = s AND a.deleted_at IS NULL
    GROUP BY s`,
  `CREATE FUNCTION asset_totals_keep() RETURNS trigger LANGUAGE plpgsql AS $$
  DECLARE
    was boolean := TG_OP = 'UPDATE' AND OLD.deleted_at IS NULL AND OLD.expired_at IS NULL;
    now_kept boolean := NEW.deleted_at IS NULL AND NEW.expired_at IS NULL;
  BEGIN
    IF was = now_kept THEN RETURN NEW; END IF;
    UPDATE asset_totals
      SET objects = objects + CASE WHEN now_kept THEN 1 ELSE -1 END,
        bytes = bytes + CASE WHEN now_kept THEN NEW.size_bytes ELSE -NEW.size_bytes END
      WHERE shard = hashtext(NEW.id) & 15;
    RETURN NEW;
  END $$`,
  `CREATE TRIGGER asset_totals_keep AFTER INSERT OR UPDATE OF deleted_at, expired_at ON assets
    FOR EACH ROW EXECUTE FUNCTION asset_totals_keep()`,
  `ALTER TABLE tasks ADD COLUMN redacted_at bigint`,
  `CREATE INDEX tasks_unredacted ON tasks (account_id, completed_at)
    WHERE redacted_at IS NULL AND status IN ('succeeded', 'failed')`,
  `ALTER TABLE task_attempts ADD COLUMN upstream_forget text
      CHECK (upstream_forget IN ('pending', 'deleted', 'failed')),
    ADD COLUMN upstream_forget_lease bigint,
    ADD COLUMN upstream_forget_at bigint`,
  `CREATE INDEX task_attempts_forget ON task_attempts (task_id) WHERE upstream_forget = 'pending'`
]
