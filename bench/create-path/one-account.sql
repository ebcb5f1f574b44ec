-- The gateway's transaction for one create (src/tasks/TaskStore.ts create, Billing.charge,
-- sql/insertTask.ts, sql/recordCharge.ts), statement for statement, run by bench/create-path.ts
-- with -D account, request, channel, micros.
\set r random(1, 999999999999)
\set now 1800000000
BEGIN;
INSERT INTO tasks (id, account_id, kind, model, operation, status, progress, request, request_version,
  client_reference_id, metadata, idempotency_key, request_digest, created_at, updated_at, channel, trace_context)
VALUES ('task_pgb_' || :client_id || '_' || :r, ':account', 'video', 'provy-famS-2.0-480p', 'generation', 'queued', 0,
  ':request'::jsonb, 1, NULL, NULL::jsonb, NULL, NULL, :now, :now, ':channel', NULL::jsonb)
ON CONFLICT (account_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
RETURNING *;
SELECT wallet_micros, subscription_micros FROM accounts WHERE id = ':account' FOR NO KEY UPDATE;
UPDATE accounts SET wallet_micros = wallet_micros - :micros, subscription_micros = subscription_micros - 0,
  updated_at = :now WHERE id = ':account';
INSERT INTO ledger (id, account_id, task_id, kind, wallet_micros, subscription_micros, created_at)
VALUES ('led_pgb_' || :client_id || '_' || :r, ':account', 'task_pgb_' || :client_id || '_' || :r, 'charge',
  -:micros, 0, :now);
UPDATE tasks SET charged_wallet_micros = :micros, charged_subscription_micros = 0
WHERE id = 'task_pgb_' || :client_id || '_' || :r;
END;
-- After the commit, as the gateway does: the wake-up for idle workers.
SELECT pg_notify('tasks_queued', ':channel');
