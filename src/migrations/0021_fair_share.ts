/**
 * Fair share and account limits (docs/engine.md, Fair share between
 * accounts), and a charge that cannot deadlock.
 *
 * `task_lanes` counts, per channel and account, the tasks `queued` there and
 * those in flight (`running`, `waiting`, `polling`): what a claim needs to
 * choose the account with the least work in flight relative to its weight,
 * to keep the channel within its `concurrency`, and an account within its
 * group's `max_in_flight_per_channel`; and what a create needs to keep an
 * account within its group's `max_queued`. Kept by a trigger on `tasks`, so
 * no step that moves a task can forget it (as `change_seq` is), and read by
 * primary key or a small partial index: a claim no longer counts the
 * channel's tasks (`count(*)` over every task in flight), whose cost grew
 * with the queue. Its rows are derived data, without a foreign key, so
 * writing one takes no lock on the account row.
 *
 * Lock order, which every writer keeps so no two can wait on each other in
 * a circle: an account row first (a create's charge, a failure's refund),
 * then task rows, then lanes (the trigger runs at the end of the statement
 * that moved the task). A claim takes no account row and skips locked
 * tasks, so it only ever waits on lanes.
 *
 * `charge_task` replaces the charge's single statement, which locked the
 * account in one CTE (`FOR NO KEY UPDATE`) and updated it in another: under
 * READ COMMITTED the UPDATE scanned the account as of the statement's start,
 * so when the row had changed while the lock was awaited it had to wait
 * again for the old version's tuple lock, held by the next create in line,
 * which was itself waiting for this one: PostgreSQL's `deadlock detected`
 * among creates of one account whose tasks were finishing (their outbox
 * rows hold key-share locks on the account, which is what lets the lock
 * queue form that way). In PL/pgSQL each statement takes a fresh snapshot,
 * so the UPDATE sees the version the SELECT locked and never waits again.
 * The function also checks, under that lock, the account's queued tasks
 * against its limit, so two creates cannot both take the last place; and it
 * stays one round trip.
 */
export default [
  `CREATE TABLE task_lanes (
    channel text NOT NULL,
    account_id text NOT NULL,
    queued integer NOT NULL DEFAULT 0,
    in_flight integer NOT NULL DEFAULT 0,
    -- The tasks the lane started, each counted from its start with a decay of one minute (started_at, ms,
    -- is when the count was last brought up to date): between lanes equally loaded, the one served least
    -- lately goes first, so slots that free again and again are handed round, not kept by one account.
    service double precision NOT NULL DEFAULT 0,
    started_at bigint,
    PRIMARY KEY (channel, account_id)
  )`,
  `CREATE INDEX task_lanes_active ON task_lanes (channel) WHERE queued > 0 OR in_flight > 0`,
  `CREATE INDEX task_lanes_account ON task_lanes (account_id) WHERE queued > 0 OR in_flight > 0`,
  // A lane's oldest queued tasks, for the claim that serves it.
  `CREATE INDEX tasks_queue_account ON tasks (channel, account_id, seq) WHERE status = 'queued'`,
  `INSERT INTO task_lanes (channel, account_id, queued, in_flight)
    SELECT channel, account_id,
      count(*) FILTER (WHERE status = 'queued'),
      count(*) FILTER (WHERE run_state IN ('running', 'waiting', 'polling'))
    FROM tasks WHERE status = 'queued' OR run_state IN ('running', 'waiting', 'polling')
    GROUP BY channel, account_id`,
  `CREATE FUNCTION task_lanes_count() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
      was_queued integer := 0; was_flying integer := 0; is_queued integer := 0; is_flying integer := 0;
      started bigint := (extract(epoch FROM clock_timestamp()) * 1000)::bigint;
    BEGIN
      IF TG_OP <> 'INSERT' THEN
        was_queued := (OLD.status = 'queued')::integer;
        was_flying := (OLD.run_state IN ('running', 'waiting', 'polling'))::integer;
      END IF;
      IF TG_OP <> 'DELETE' THEN
        is_queued := (NEW.status = 'queued')::integer;
        is_flying := (NEW.run_state IN ('running', 'waiting', 'polling'))::integer;
      END IF;
      IF TG_OP = 'UPDATE' AND OLD.channel = NEW.channel AND OLD.account_id = NEW.account_id THEN
        IF was_queued <> is_queued OR was_flying <> is_flying THEN
          UPDATE task_lanes SET queued = queued + is_queued - was_queued, in_flight = in_flight + is_flying - was_flying,
            service = CASE WHEN is_flying > was_flying
              THEN coalesce(service * exp(greatest(-700, (started_at - started) / 60000.0)), 0) + 1 ELSE service END,
            started_at = CASE WHEN is_flying > was_flying THEN started ELSE started_at END
          WHERE channel = NEW.channel AND account_id = NEW.account_id;
        END IF;
        RETURN NULL;
      END IF;
      -- A task that changed lanes (a failover to another channel): the two lanes in one order, so two
      -- tasks moving between the same channels in opposite directions cannot wait on each other.
      IF TG_OP <> 'INSERT' AND TG_OP <> 'DELETE' AND NEW.channel < OLD.channel AND is_queued + is_flying > 0 THEN
        INSERT INTO task_lanes (channel, account_id, queued, in_flight, service, started_at)
        VALUES (NEW.channel, NEW.account_id, is_queued, is_flying, is_flying, CASE WHEN is_flying > 0 THEN started END)
        ON CONFLICT (channel, account_id) DO UPDATE
          SET queued = task_lanes.queued + is_queued, in_flight = task_lanes.in_flight + is_flying,
            service = CASE WHEN is_flying > 0 THEN coalesce(
              task_lanes.service * exp(greatest(-700, (task_lanes.started_at - started) / 60000.0)), 0) + 1
              ELSE task_lanes.service END,
            started_at = CASE WHEN is_flying > 0 THEN started ELSE task_lanes.started_at END;
        is_queued := 0; is_flying := 0;
      END IF;
      IF was_queued + was_flying > 0 THEN
        UPDATE task_lanes SET queued = queued - was_queued, in_flight = in_flight - was_flying
        WHERE channel = OLD.channel AND account_id = OLD.account_id;
      END IF;
      IF is_queued + is_flying > 0 THEN
        INSERT INTO task_lanes (channel, account_id, queued, in_flight, service, started_at)
        VALUES (NEW.channel, NEW.account_id, is_queued, is_flying, is_flying, CASE WHEN is_flying > 0 THEN started END)
        ON CONFLICT (channel, account_id) DO UPDATE
          SET queued = task_lanes.queued + is_queued, in_flight = task_lanes.in_flight + is_flying,
            service = CASE WHEN is_flying > 0 THEN coalesce(
              task_lanes.service * exp(greatest(-700, (task_lanes.started_at - started) / 60000.0)), 0) + 1
              ELSE task_lanes.service END,
            started_at = CASE WHEN is_flying > 0 THEN started ELSE task_lanes.started_at END;
      END IF;
      RETURN NULL;
    END
  $$`,
  `CREATE TRIGGER task_lanes_insert AFTER INSERT ON tasks FOR EACH ROW EXECUTE FUNCTION task_lanes_count()`,
  `CREATE TRIGGER task_lanes_delete AFTER DELETE ON tasks FOR EACH ROW EXECUTE FUNCTION task_lanes_count()`,
  `CREATE TRIGGER task_lanes_update AFTER UPDATE OF status, run_state, channel, account_id ON tasks FOR EACH ROW
    WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.run_state IS DISTINCT FROM NEW.run_state
      OR OLD.channel IS DISTINCT FROM NEW.channel OR OLD.account_id IS DISTINCT FROM NEW.account_id)
    EXECUTE FUNCTION task_lanes_count()`,
  /*
   * The pre-charge of a new task, under the account's lock: refused with
   * `queue_full` when the account already has `max_queued` (by its group, from
   * `limits`, a JSON object of group → limit; a group not in it has none)
   * tasks queued, or `insufficient_balance` when the balances cannot pay;
   * otherwise debited (the subscription first when `use_subscription`) and
   * the ledger's charge written. Answers one row: the outcome, the balances
   * after it, what the subscription paid, and the account's queued tasks
   * before this one, and the account's group; none when the account does not exist.
   */
  `CREATE FUNCTION charge_task(
      p_account text, p_task text, p_ledger text, p_micros bigint, p_use_subscription boolean, p_now bigint,
      p_limits jsonb)
    RETURNS TABLE (outcome text, wallet bigint, subscription bigint, from_subscription bigint, queued bigint,
      group_name text)
    LANGUAGE plpgsql AS $$
    DECLARE
      a record; from_sub bigint; n bigint := 0; max_queued bigint;
    BEGIN
      SELECT acc.wallet_micros, acc.subscription_micros, acc.group_name INTO a
      FROM accounts acc WHERE acc.id = p_account FOR NO KEY UPDATE;
      IF NOT FOUND THEN RETURN; END IF;
      max_queued := (p_limits ->> a.group_name)::bigint;
      SELECT coalesce(sum(l.queued), 0) INTO n FROM task_lanes l WHERE l.account_id = p_account AND l.queued > 0;
      IF max_queued IS NOT NULL AND n >= max_queued THEN
        RETURN QUERY SELECT 'queue_full'::text, a.wallet_micros, a.subscription_micros, 0::bigint, n, a.group_name;
        RETURN;
      END IF;
      from_sub := CASE WHEN p_use_subscription THEN LEAST(a.subscription_micros, p_micros) ELSE 0 END;
      IF p_micros - from_sub > a.wallet_micros THEN
        RETURN QUERY SELECT 'insufficient_balance'::text, a.wallet_micros, a.subscription_micros, 0::bigint, n,
          a.group_name;
        RETURN;
      END IF;
      UPDATE accounts SET wallet_micros = accounts.wallet_micros - (p_micros - from_sub),
        subscription_micros = accounts.subscription_micros - from_sub, updated_at = p_now
      WHERE accounts.id = p_account;
      INSERT INTO ledger (id, account_id, task_id, kind, wallet_micros, subscription_micros, created_at)
      VALUES (p_ledger, p_account, p_task, 'charge', -(p_micros - from_sub), -from_sub, p_now);
      RETURN QUERY SELECT 'charged'::text, a.wallet_micros - (p_micros - from_sub), a.subscription_micros - from_sub,
        from_sub, n, a.group_name;
    END
  $$`
]
