-- The gateway's transaction for one create (src/tasks/TaskStore.ts create: Billing.charge's one
-- statement, then sql/insertTask.ts), statement for statement, run by bench/create-path.ts
-- with -D request, channel, micros, and lo and hi: the account is bench_accounts' row n, drawn
-- from lo to hi (0 to 0: the one hot account; 1 to 100: spread over 100 accounts).
\set r random(1, 999999999999)
\set now 1800000000
-- The account, as the gateway's keys are used in turn.
\set k random(:lo, :hi)
SELECT id AS account FROM bench_accounts WHERE n = :k \gset
BEGIN;
WITH account AS (
  SELECT wallet_micros, subscription_micros,
    CASE WHEN false::boolean THEN LEAST(subscription_micros, :micros::bigint) ELSE 0::bigint END AS from_subscription
  FROM accounts WHERE id = ':account' FOR NO KEY UPDATE
), debit AS (
  UPDATE accounts
  SET wallet_micros = accounts.wallet_micros - (:micros::bigint - account.from_subscription),
      subscription_micros = accounts.subscription_micros - account.from_subscription,
      updated_at = :now
  FROM account
  WHERE accounts.id = ':account' AND :micros::bigint - account.from_subscription <= account.wallet_micros
  RETURNING account.from_subscription
), entry AS (
  INSERT INTO ledger (id, account_id, task_id, kind, wallet_micros, subscription_micros, created_at)
  SELECT ('led_pgb_' || :client_id || '_' || :r)::text, ':account'::text, ('task_pgb_' || :client_id || '_' || :r)::text,
    'charge', -(:micros::bigint - from_subscription), -from_subscription, :now::bigint
  FROM debit
)
SELECT wallet_micros, subscription_micros, from_subscription, EXISTS (SELECT 1 FROM debit) AS charged FROM account;
INSERT INTO tasks (id, account_id, kind, model, operation, status, progress, request, request_version,
  client_reference_id, metadata, idempotency_key, request_digest, created_at, updated_at, channel, trace_context,
  charged_wallet_micros, charged_subscription_micros)
VALUES ('task_pgb_' || :client_id || '_' || :r, ':account', 'video', 'provy-famS-2.0-480p', 'generation', 'queued', 0,
  ':request'::jsonb, 1, NULL, NULL::jsonb, NULL, NULL, :now, :now, ':channel', NULL::jsonb, :micros, 0)
ON CONFLICT (account_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
RETURNING id, kind, model, operation, status, progress, result, error, usage, client_reference_id, metadata,
  request_digest, created_at, started_at, completed_at, updated_at;
END;
-- After the commit, as the gateway does: the wake-up for idle workers.
SELECT pg_notify('tasks_queued', ':channel');
