-- The gateway's transaction for one create (src/tasks/TaskStore.ts create: Billing.charge's one
-- call of charge_task, then the task's INSERT carrying what was taken), statement for statement,
-- run by bench/create-path.ts with -D request, channel, micros, and lo and hi: the account and its
-- model key are bench_accounts' row n, drawn from lo to hi (0 to 0: the one hot account; 1 to 100:
-- spread over 100 accounts).
\set r random(1, 999999999999)
\set now 1800000000
-- The account and key, as the gateway's keys are used in turn.
\set k random(:lo, :hi)
SELECT id AS account, key_id AS key FROM bench_accounts WHERE n = :k \gset
BEGIN;
-- No group has max_queued (the gateway's default groups.json): the limits are the empty object.
SELECT * FROM charge_task(':account', ':key', 'task_pgb_' || :client_id || '_' || :r,
  'led_pgb_' || :client_id || '_' || :r, :micros::bigint, false, :now::bigint, '{}'::jsonb);
INSERT INTO tasks (id, account_id, kind, model, operation, status, progress, request, request_version,
  client_reference_id, metadata, idempotency_key, request_digest, created_at, updated_at, channel, trace_context,
  charged_wallet_micros, charged_subscription_micros, cancel_at)
VALUES ('task_pgb_' || :client_id || '_' || :r, ':account', 'video', 'provy-famS-2.0-480p', 'generation', 'queued', 0,
  ':request'::jsonb, 1, NULL, NULL::jsonb, NULL, NULL, :now, :now, ':channel', NULL::jsonb, :micros, 0, NULL)
ON CONFLICT (account_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
RETURNING id, kind, model, operation, status, progress, result, error, usage, client_reference_id, metadata,
  request_digest, created_at, started_at, completed_at, updated_at;
END;
-- After the commit, as the gateway does: the wake-up for idle workers.
SELECT pg_notify('tasks_queued', ':channel');
