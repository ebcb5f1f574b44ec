/**
 * The usage report's sums by UTC day (docs/operating.md, Money): per day,
 * account, model and channel, the tasks created and the credits they were
 * charged, the credits refunded, and the upstream cost of the attempts
 * their providers bill. Kept by triggers as the rows they sum change (a
 * task created: its charge; refunded: its refund, on the day of the refund;
 * an attempt's cost or billing recorded: the difference, on the day the
 * attempt started), so a report reads a row per day and group of its
 * window, whatever the history holds: over a million tasks, a scan of the
 * window's tasks and ledger took about a second, and grew with the window.
 * The channel of a credit is the task's channel at the time (its first at
 * the charge); of a cost, the attempt's.
 */
export default [
  `CREATE TABLE usage_daily (
    day integer NOT NULL,
    account_id text NOT NULL,
    model text NOT NULL,
    channel text NOT NULL,
    tasks integer NOT NULL DEFAULT 0,
    charged_micros bigint NOT NULL DEFAULT 0,
    refunded_micros bigint NOT NULL DEFAULT 0,
    cost_micros bigint NOT NULL DEFAULT 0,
    billed integer NOT NULL DEFAULT 0,
    PRIMARY KEY (day, account_id, model, channel)
  )`,
  `INSERT INTO usage_daily (day, account_id, model, channel, tasks, charged_micros)
    SELECT (created_at / 86400)::integer, account_id, model, channel, count(*),
      sum(charged_wallet_micros + charged_subscription_micros)
    FROM tasks GROUP BY 1, 2, 3, 4`,
  `INSERT INTO usage_daily (day, account_id, model, channel, refunded_micros)
    SELECT (refunded_at / 86400)::integer, account_id, model, channel,
      sum(charged_wallet_micros + charged_subscription_micros)
    FROM tasks WHERE refunded_at IS NOT NULL GROUP BY 1, 2, 3, 4
    ON CONFLICT (day, account_id, model, channel) DO UPDATE SET refunded_micros = EXCLUDED.refunded_micros`,
  `INSERT INTO usage_daily (day, account_id, model, channel, cost_micros, billed)
    SELECT (a.created_at / 86400)::integer, t.account_id, t.model, a.channel, coalesce(sum(a.cost_micros), 0), count(*)
    FROM task_attempts a JOIN tasks t ON t.id = a.task_id WHERE a.billed GROUP BY 1, 2, 3, 4
    ON CONFLICT (day, account_id, model, channel) DO UPDATE
      SET cost_micros = EXCLUDED.cost_micros, billed = EXCLUDED.billed`,
  `CREATE FUNCTION usage_daily_add(
      p_day integer, p_account text, p_model text, p_channel text, p_tasks integer, p_charged bigint,
      p_refunded bigint, p_cost bigint, p_billed integer) RETURNS void LANGUAGE sql AS $$
    INSERT INTO usage_daily (day, account_id, model, channel, tasks, charged_micros, refunded_micros, cost_micros, billed)
    VALUES (p_day, p_account, p_model, p_channel, p_tasks, p_charged, p_refunded, p_cost, p_billed)
    ON CONFLICT (day, account_id, model, channel) DO UPDATE SET
      tasks = usage_daily.tasks + p_tasks, charged_micros = usage_daily.charged_micros + p_charged,
      refunded_micros = usage_daily.refunded_micros + p_refunded, cost_micros = usage_daily.cost_micros + p_cost,
      billed = usage_daily.billed + p_billed
  $$`,
  `CREATE FUNCTION tasks_usage() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP = 'INSERT' THEN
        PERFORM usage_daily_add((NEW.created_at / 86400)::integer, NEW.account_id, NEW.model, NEW.channel, 1,
          NEW.charged_wallet_micros + NEW.charged_subscription_micros, 0, 0, 0);
      ELSE
        PERFORM usage_daily_add((NEW.refunded_at / 86400)::integer, NEW.account_id, NEW.model, NEW.channel, 0, 0,
          NEW.charged_wallet_micros + NEW.charged_subscription_micros, 0, 0);
      END IF;
      RETURN NULL;
    END
  $$`,
  `CREATE TRIGGER tasks_usage_insert AFTER INSERT ON tasks FOR EACH ROW EXECUTE FUNCTION tasks_usage()`,
  `CREATE TRIGGER tasks_usage_refund AFTER UPDATE OF refunded_at ON tasks FOR EACH ROW
    WHEN (OLD.refunded_at IS NULL AND NEW.refunded_at IS NOT NULL) EXECUTE FUNCTION tasks_usage()`,
  `CREATE FUNCTION task_attempts_usage() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
      was_cost bigint := 0; was_billed integer := 0; is_cost bigint; is_billed integer; t record;
    BEGIN
      IF TG_OP = 'UPDATE' THEN
        IF OLD.billed THEN
          was_cost := coalesce(OLD.cost_micros, 0); was_billed := 1;
        END IF;
      END IF;
      is_cost := CASE WHEN coalesce(NEW.billed, false) THEN coalesce(NEW.cost_micros, 0) ELSE 0 END;
      is_billed := CASE WHEN coalesce(NEW.billed, false) THEN 1 ELSE 0 END;
      IF is_cost <> was_cost OR is_billed <> was_billed THEN
        SELECT account_id, model INTO t FROM tasks WHERE id = NEW.task_id;
        PERFORM usage_daily_add((NEW.created_at / 86400)::integer, t.account_id, t.model, NEW.channel, 0, 0, 0,
          is_cost - was_cost, is_billed - was_billed);
      END IF;
      RETURN NULL;
    END
  $$`,
  `CREATE TRIGGER task_attempts_usage AFTER INSERT OR UPDATE OF cost_micros, billed ON task_attempts FOR EACH ROW
    EXECUTE FUNCTION task_attempts_usage()`
]
