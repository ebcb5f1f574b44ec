/**
 * Spend limits per key and the low-balance alert (docs/api.md, Spend limits;
 * docs/webhooks.md, account.balance_low).
 *
 * `key_spend` counts, per model token and UTC day, the credits its creates
 * took net of their refunds: a day's row and a month's rows (at most 31)
 * are what a create reads to hold a key to its `daily_limit_micros` and
 * `monthly_limit_micros`, so the check costs the same however many tasks
 * the key made. The charge writes the ledger entry with the key that made
 * it, and a refund finds the day it gives back to from that entry
 * (through `ledger_task`, migration 3).
 *
 * `charge_task` gains the key: under the account's lock (which every create
 * of the account, and so of the key, takes first) it reads the key's limits
 * and spend, refuses with `spend_limit` past either, and otherwise counts
 * the charge in the key's day. So fifty concurrent creates against a limit
 * of ten tasks' worth charge exactly ten, on any number of replicas. It also
 * raises the account's low-balance flag when the wallet falls below the
 * operator's threshold (the flag is down again once the wallet is back at
 * or above it): the create that raises it writes the one
 * `account.balance_low` event in its transaction.
 */
export default [
  `ALTER TABLE api_keys ADD COLUMN daily_limit_micros bigint, ADD COLUMN monthly_limit_micros bigint`,
  `CREATE TABLE key_spend (
    key_id text NOT NULL,
    day integer NOT NULL,
    spent_micros bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (key_id, day)
  )`,
  `ALTER TABLE ledger ADD COLUMN key_id text`,
  `ALTER TABLE accounts ADD COLUMN low_balance_micros bigint,
    ADD COLUMN low_balance_notified boolean NOT NULL DEFAULT false`,
  `DROP FUNCTION charge_task(text, text, text, bigint, boolean, bigint, jsonb)`,
  /*
   * The pre-charge of a new task made with key `p_key`, under the account's
   * lock: refused with `queue_full` (the account has its group's `max_queued`
   * tasks queued, from `p_limits`, group → limit), `spend_limit` (the key's
   * spend today or this UTC month would pass its limit) or
   * `insufficient_balance`; otherwise debited, the ledger's charge written
   * with the key, and the charge counted in the key's day. One row: the
   * outcome, the balances after it, what the subscription paid, the
   * account's queued tasks before this one, its group, the key's spend
   * today and this month before this charge with its two limits, and
   * whether this charge took the wallet below the account's low-balance
   * threshold for the first time since it was last at or above it. None
   * when the account does not exist.
   */
  `CREATE FUNCTION charge_task(
      p_account text, p_key text, p_task text, p_ledger text, p_micros bigint, p_use_subscription boolean,
      p_now bigint, p_limits jsonb)
    RETURNS TABLE (outcome text, wallet bigint, subscription bigint, from_subscription bigint, queued bigint,
      group_name text, spent_today bigint, spent_month bigint, daily_limit bigint, monthly_limit bigint,
      balance_low boolean)
    LANGUAGE plpgsql AS $$
    DECLARE
      a record; k record; from_sub bigint; n bigint := 0; max_queued bigint;
      today integer := (p_now / 86400)::integer;
      month_start integer := (extract(epoch FROM date_trunc('month', to_timestamp(p_now) AT TIME ZONE 'UTC')) / 86400)::integer;
      day_spent bigint := 0; month_spent bigint := 0; low boolean := false;
    BEGIN
      SELECT acc.wallet_micros, acc.subscription_micros, acc.group_name, acc.low_balance_micros,
        acc.low_balance_notified INTO a
      FROM accounts acc WHERE acc.id = p_account FOR NO KEY UPDATE;
      IF NOT FOUND THEN RETURN; END IF;
      SELECT ak.daily_limit_micros, ak.monthly_limit_micros INTO k FROM api_keys ak WHERE ak.id = p_key;
      SELECT coalesce(sum(s.spent_micros) FILTER (WHERE s.day = today), 0), coalesce(sum(s.spent_micros), 0)
        INTO day_spent, month_spent
      FROM key_spend s WHERE s.key_id = p_key AND s.day >= month_start;
      max_queued := (p_limits ->> a.group_name)::bigint;
      SELECT coalesce(sum(l.queued), 0) INTO n FROM task_lanes l WHERE l.account_id = p_account AND l.queued > 0;
      IF max_queued IS NOT NULL AND n >= max_queued THEN
        RETURN QUERY SELECT 'queue_full'::text, a.wallet_micros, a.subscription_micros, 0::bigint, n, a.group_name,
          day_spent, month_spent, k.daily_limit_micros, k.monthly_limit_micros, false;
        RETURN;
      END IF;
      IF (k.daily_limit_micros IS NOT NULL AND day_spent + p_micros > k.daily_limit_micros)
        OR (k.monthly_limit_micros IS NOT NULL AND month_spent + p_micros > k.monthly_limit_micros) THEN
        RETURN QUERY SELECT 'spend_limit'::text, a.wallet_micros, a.subscription_micros, 0::bigint, n, a.group_name,
          day_spent, month_spent, k.daily_limit_micros, k.monthly_limit_micros, false;
        RETURN;
      END IF;
      from_sub := CASE WHEN p_use_subscription THEN LEAST(a.subscription_micros, p_micros) ELSE 0 END;
      IF p_micros - from_sub > a.wallet_micros THEN
        RETURN QUERY SELECT 'insufficient_balance'::text, a.wallet_micros, a.subscription_micros, 0::bigint, n,
          a.group_name, day_spent, month_spent, k.daily_limit_micros, k.monthly_limit_micros, false;
        RETURN;
      END IF;
      low := a.low_balance_micros IS NOT NULL AND NOT a.low_balance_notified
        AND a.wallet_micros - (p_micros - from_sub) < a.low_balance_micros;
      UPDATE accounts SET wallet_micros = accounts.wallet_micros - (p_micros - from_sub),
        subscription_micros = accounts.subscription_micros - from_sub, updated_at = p_now,
        low_balance_notified = accounts.low_balance_notified OR low
      WHERE accounts.id = p_account;
      INSERT INTO ledger (id, account_id, task_id, kind, wallet_micros, subscription_micros, created_at, key_id)
      VALUES (p_ledger, p_account, p_task, 'charge', -(p_micros - from_sub), -from_sub, p_now, p_key);
      INSERT INTO key_spend (key_id, day, spent_micros) VALUES (p_key, today, p_micros)
      ON CONFLICT (key_id, day) DO UPDATE SET spent_micros = key_spend.spent_micros + p_micros;
      RETURN QUERY SELECT 'charged'::text, a.wallet_micros - (p_micros - from_sub), a.subscription_micros - from_sub,
        from_sub, n, a.group_name, day_spent, month_spent, k.daily_limit_micros, k.monthly_limit_micros, low;
    END
  $$`
]
