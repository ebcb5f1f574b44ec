/**
 * A create in one statement (docs/performance.md, Creates): `create_task`
 * does what `charge_task` (migration 23) and the task's INSERT did as two
 * statements of one transaction, so a create is one round trip to the
 * database, a transaction of its own, and holds the account's lock for no
 * round trip at all (before, the lock was held from the charge across the
 * INSERT and the COMMIT).
 *
 * In order, under the account's lock, which every create of the account
 * takes first (the lock order of migration 21: the account row, then the
 * task's, then its lanes): the account's queue against its group's
 * `max_queued`, the key's spend against its limits, the balances against
 * the price; then the task's INSERT, which finds an Idempotency-Key already
 * used (nothing is written, and the caller replays the original); only then
 * the debit, the ledger's charge and the key's day. Checked before the
 * INSERT, so the queue counted is the one before this task.
 *
 * A charge that would take the wallet below the account's low-balance
 * threshold for the first time writes the `account.balance_low` event in
 * its own transaction: with `p_allow_low` false such a create writes
 * nothing and answers `balance_low`, and the caller makes it again with
 * `p_allow_low` true inside a transaction that records the event. A
 * crossing is rare (once until the wallet is back above the threshold), so
 * every other create stays one statement.
 *
 * `charge_task` has no caller left and goes.
 */
export default [
  `CREATE FUNCTION create_task(
      p_account text, p_key text, p_ledger text, p_micros bigint, p_use_subscription boolean, p_limits jsonb,
      p_allow_low boolean, p_id text, p_kind text, p_model text, p_operation text, p_request jsonb,
      p_request_version integer, p_client_reference_id text, p_metadata jsonb, p_idempotency_key text,
      p_digest text, p_now bigint, p_channel text, p_trace_context jsonb, p_cancel_at bigint)
    RETURNS TABLE (outcome text, wallet bigint, subscription bigint, from_subscription bigint, queued bigint,
      group_name text, spent_today bigint, spent_month bigint, daily_limit bigint, monthly_limit bigint,
      balance_low boolean, task json)
    LANGUAGE plpgsql AS $$
    DECLARE
      a record; k record; t record; from_sub bigint; n bigint := 0; max_queued bigint;
      today integer := (p_now / 86400)::integer;
      month_start integer := (extract(epoch FROM date_trunc('month', to_timestamp(p_now) AT TIME ZONE 'UTC')) / 86400)::integer;
      day_spent bigint := 0; month_spent bigint := 0; low boolean := false;
    BEGIN
      SELECT acc.wallet_micros, acc.subscription_micros, acc.group_name, acc.low_balance_micros,
        acc.low_balance_notified INTO a
      FROM accounts acc WHERE acc.id = p_account FOR NO KEY UPDATE;
      IF NOT FOUND THEN RETURN; END IF;
      SELECT ak.daily_limit_micros, ak.monthly_limit_micros INTO k FROM api_keys ak WHERE ak.id = p_key;
      -- The key's spend is read only against a limit it has: most keys have none.
      IF k.daily_limit_micros IS NOT NULL OR k.monthly_limit_micros IS NOT NULL THEN
        SELECT coalesce(sum(s.spent_micros) FILTER (WHERE s.day = today), 0), coalesce(sum(s.spent_micros), 0)
          INTO day_spent, month_spent
        FROM key_spend s WHERE s.key_id = p_key AND s.day >= month_start;
      END IF;
      -- Likewise the account's queue, only against its group's limit.
      max_queued := (p_limits ->> a.group_name)::bigint;
      IF max_queued IS NOT NULL THEN
        SELECT coalesce(sum(l.queued), 0) INTO n FROM task_lanes l WHERE l.account_id = p_account AND l.queued > 0;
        IF n >= max_queued THEN
          RETURN QUERY SELECT 'queue_full'::text, a.wallet_micros, a.subscription_micros, 0::bigint, n, a.group_name,
            day_spent, month_spent, k.daily_limit_micros, k.monthly_limit_micros, false, NULL::json;
          RETURN;
        END IF;
      END IF;
      IF (k.daily_limit_micros IS NOT NULL AND day_spent + p_micros > k.daily_limit_micros)
        OR (k.monthly_limit_micros IS NOT NULL AND month_spent + p_micros > k.monthly_limit_micros) THEN
        RETURN QUERY SELECT 'spend_limit'::text, a.wallet_micros, a.subscription_micros, 0::bigint, n, a.group_name,
          day_spent, month_spent, k.daily_limit_micros, k.monthly_limit_micros, false, NULL::json;
        RETURN;
      END IF;
      from_sub := CASE WHEN p_use_subscription THEN LEAST(a.subscription_micros, p_micros) ELSE 0 END;
      IF p_micros - from_sub > a.wallet_micros THEN
        RETURN QUERY SELECT 'insufficient_balance'::text, a.wallet_micros, a.subscription_micros, 0::bigint, n,
          a.group_name, day_spent, month_spent, k.daily_limit_micros, k.monthly_limit_micros, false, NULL::json;
        RETURN;
      END IF;
      low := a.low_balance_micros IS NOT NULL AND NOT a.low_balance_notified
        AND a.wallet_micros - (p_micros - from_sub) < a.low_balance_micros;
      IF low AND NOT p_allow_low THEN
        RETURN QUERY SELECT 'balance_low'::text, a.wallet_micros, a.subscription_micros, 0::bigint, n, a.group_name,
          day_spent, month_spent, k.daily_limit_micros, k.monthly_limit_micros, true, NULL::json;
        RETURN;
      END IF;
      INSERT INTO tasks AS ts (id, account_id, kind, model, operation, status, progress, request, request_version,
        client_reference_id, metadata, idempotency_key, request_digest, created_at, updated_at, channel,
        trace_context, charged_wallet_micros, charged_subscription_micros, cancel_at)
      VALUES (p_id, p_account, p_kind, p_model, p_operation, 'queued', 0, p_request, p_request_version,
        p_client_reference_id, p_metadata, p_idempotency_key, p_digest, p_now, p_now, p_channel, p_trace_context,
        p_micros - from_sub, from_sub, p_cancel_at)
      ON CONFLICT (account_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
      RETURNING ts.id, ts.kind, ts.model, ts.operation, ts.status, ts.progress, ts.result, ts.error, ts.usage,
        ts.client_reference_id, ts.metadata, ts.request_digest, ts.created_at, ts.started_at, ts.completed_at,
        ts.updated_at INTO t;
      IF NOT FOUND THEN
        RETURN QUERY SELECT 'key_taken'::text, a.wallet_micros, a.subscription_micros, 0::bigint, n, a.group_name,
          day_spent, month_spent, k.daily_limit_micros, k.monthly_limit_micros, false, NULL::json;
        RETURN;
      END IF;
      UPDATE accounts SET wallet_micros = accounts.wallet_micros - (p_micros - from_sub),
        subscription_micros = accounts.subscription_micros - from_sub, updated_at = p_now,
        low_balance_notified = accounts.low_balance_notified OR low
      WHERE accounts.id = p_account;
      INSERT INTO ledger (id, account_id, task_id, kind, wallet_micros, subscription_micros, created_at, key_id)
      VALUES (p_ledger, p_account, p_id, 'charge', -(p_micros - from_sub), -from_sub, p_now, p_key);
      INSERT INTO key_spend (key_id, day, spent_micros) VALUES (p_key, today, p_micros)
      ON CONFLICT (key_id, day) DO UPDATE SET spent_micros = key_spend.spent_micros + p_micros;
      RETURN QUERY SELECT 'charged'::text, a.wallet_micros - (p_micros - from_sub), a.subscription_micros - from_sub,
        from_sub, n, a.group_name, day_spent, month_spent, k.daily_limit_micros, k.monthly_limit_micros, low,
        json_build_object('id', t.id, 'kind', t.kind, 'model', t.model, 'operation', t.operation,
          'status', t.status, 'progress', t.progress, 'result', t.result, 'error', t.error, 'usage', t.usage,
          'client_reference_id', t.client_reference_id, 'metadata', t.metadata, 'request_digest', t.request_digest,
          'created_at', t.created_at, 'started_at', t.started_at, 'completed_at', t.completed_at,
          'updated_at', t.updated_at);
    END
  $$`,
  `DROP FUNCTION charge_task(text, text, text, text, bigint, boolean, bigint, jsonb)`
]
