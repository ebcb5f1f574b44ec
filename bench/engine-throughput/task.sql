-- The gateway's transactions for one task, from create to succeeded, statement for statement as
-- the PostgreSQL statement log showed them for one task (`CAPTURE=1 npm run bench:throughput`,
-- at 5ea3c17), run by bench/engine-throughput.ts with -D channel, request (the stored
-- request of a task the gateway made), micros (its charge). Times are fixed numbers: run_at in
-- milliseconds, the rest in seconds, as the gateway stores them.
--
-- As in the engine, the shared statements take whichever task is due, not necessarily the one
-- this client created: the claim takes the oldest queued task of the channel, the poller's pass
-- the oldest waiting one (SKIP LOCKED; each client has put one task in each state before it asks,
-- so there is nearly always one; when the pass finds none, this run of the script ends there and
-- its task is left for a later pass: a few sequences of a run, at most, are not completed).
-- The gateway's pass takes up to 500 waiting tasks at once; here one.
--
-- Left out, as they are not per task: the worker's idle claims on its other channels, the webhook
-- dispatcher's lookups, the lease heartbeats and the reaper.
\set r random(1, 999999999999)
-- Client n charges the account of row n, as the benchmark's client n creates with account n's key
-- (one indexed SELECT more than the gateway makes).
SELECT id AS account FROM bench_accounts WHERE n = :client_id \gset
\set now 1800000000
\set nowms 1800000000000

-- 1. Create (API: TaskStore.create): the charge in one statement, the task, COMMIT; then the
--    wake-up for idle workers.
BEGIN;
WITH account AS (
  SELECT wallet_micros, subscription_micros,
    CASE WHEN true::boolean THEN LEAST(subscription_micros, :micros::bigint) ELSE 0::bigint END AS from_subscription
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
  ':request'::jsonb, 1, NULL, NULL::jsonb, NULL, '19afed4b8510679e2dd0f6f0166239a2854705053e7817910351c2427a923409',
  :now, :now, ':channel', '{"traceparent": "00-9821644666349bbb8100872b386357e7-2ff9d1ba3c7077a2-01"}'::jsonb, :micros, 0)
ON CONFLICT (account_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
RETURNING id, kind, model, operation, status, progress, result, error, usage, client_reference_id, metadata,
  request_digest, created_at, started_at, completed_at, updated_at;
END;
SELECT pg_notify('tasks_queued', ':channel');

-- 2. Claim (worker: ChannelWorker, sql/claimTasks.ts) under the channel's lock, within its
--    concurrency (10000 here, as in the benchmark's config); the gateway asks for as many as it has
--    free slots, one here.
BEGIN;
SELECT pg_advisory_xact_lock(hashtextextended('tasks.channel:' || ':channel', 0));
UPDATE tasks
SET status = 'in_progress', run_state = 'running', run_at = NULL, attempt = attempt + 1,
    lease_owner = 'wrk_pgbench_' || :client_id, lease_expires_at = :nowms + 30000, started_at = :now, updated_at = :now
WHERE id IN (
  SELECT id FROM tasks WHERE status = 'queued' AND channel = ':channel'
  ORDER BY seq
  LIMIT GREATEST(0, LEAST(1::int, 10000::int - (
    SELECT count(*)::int FROM tasks WHERE channel = ':channel' AND run_state IN ('running', 'waiting', 'polling'))))
  FOR UPDATE SKIP LOCKED)
RETURNING id, account_id, kind, model, channel, request, request_version, attempt, trace_context, created_at
\gset c_
COMMIT;

-- 3. Submit (SubmitUpstream): no earlier attempt left unresolved, the attempt recorded as
--    submitting before the upstream call (each its own statement, no transaction).
SELECT attempt FROM task_attempts WHERE task_id = ':c_id' AND attempt < 1 AND outcome = 'submitting';
INSERT INTO task_attempts (task_id, attempt, channel, upstream_id, outcome, last_answer, created_at, updated_at)
VALUES (':c_id', 1, ':channel', NULL, 'submitting', NULL::jsonb, :now, :now)
ON CONFLICT (task_id, attempt) DO UPDATE SET
  upstream_id = COALESCE(EXCLUDED.upstream_id, task_attempts.upstream_id), outcome = EXCLUDED.outcome,
  last_answer = COALESCE(EXCLUDED.last_answer, task_attempts.last_answer), updated_at = EXCLUDED.updated_at;

-- 4. The upstream took it: the attempt's upstream id, then the task waiting for its first poll.
INSERT INTO task_attempts (task_id, attempt, channel, upstream_id, outcome, last_answer, created_at, updated_at)
VALUES (':c_id', 1, ':channel', 'up_' || ':c_id', 'waiting', NULL::jsonb, :now, :now)
ON CONFLICT (task_id, attempt) DO UPDATE SET
  upstream_id = COALESCE(EXCLUDED.upstream_id, task_attempts.upstream_id), outcome = EXCLUDED.outcome,
  last_answer = COALESCE(EXCLUDED.last_answer, task_attempts.last_answer), updated_at = EXCLUDED.updated_at;
UPDATE tasks SET run_state = 'waiting', run_at = :nowms, upstream_id = 'up_' || ':c_id',
  upstream_model = 'bench-upstream-video', submitted_at = :nowms, polls = 0,
  lease_owner = NULL, lease_expires_at = NULL, updated_at = :now
WHERE id = ':c_id' AND attempt = 1 AND status = 'in_progress' AND run_state = 'running' RETURNING id;

-- 5. The poller's pass (UpstreamPoller, sql/claimWaiting.ts): the due waiting tasks held while
--    they are polled; the upstream says succeeded; the task held for its download (holdPoll) and
--    the answer recorded on the attempt.
WITH pass AS (
UPDATE tasks SET run_at = :nowms + 60000, run_state = 'polling', nudged = false
WHERE id IN (
  SELECT id FROM tasks WHERE run_state IN ('waiting', 'polling') AND channel = ':channel' AND run_at <= :nowms
  ORDER BY run_at LIMIT 1
  FOR UPDATE SKIP LOCKED)
RETURNING id, account_id, kind, model, channel, request, request_version, attempt,
  trace_context, created_at, upstream_id, upstream_model, submitted_at, polls
)
-- (pgbench only: whether the pass found one; now and then it finds none, see the top.)
SELECT coalesce((SELECT id FROM pass), '') AS id, coalesce((SELECT account_id FROM pass), '') AS account_id,
  (SELECT count(*) FROM pass) AS found
\gset p_
\if :p_found
UPDATE tasks SET run_at = :nowms + 630000 WHERE id = ':p_id' AND attempt = 1 AND status = 'in_progress' AND run_state = 'polling';
INSERT INTO task_attempts (task_id, attempt, channel, upstream_id, outcome, last_answer, created_at, updated_at)
VALUES (':p_id', 1, ':channel', 'up_' || ':p_id', 'succeeded',
  ('{"id": "up_' || ':p_id' || '", "error": null, "model": "bench-upstream-video", "object": "video.task", "result": {"videos": [{"url": "http://127.0.0.1:38161/v1/assets/asset_7ecy0foncjp0/content", "index": 0, "asset_id": "asset_7ecy0foncjp0", "url_auth": "resource_api_key", "mime_type": "video/mp4"}]}, "status": "succeeded", "metadata": {}, "progress": 100, "operation": "generation", "created_at": 1795468361, "started_at": 1795468361, "updated_at": 1795468361, "completed_at": 1795468361, "client_reference_id": "' || ':p_id' || '"}')::jsonb,
  :now, :now)
ON CONFLICT (task_id, attempt) DO UPDATE SET
  upstream_id = COALESCE(EXCLUDED.upstream_id, task_attempts.upstream_id), outcome = EXCLUDED.outcome,
  last_answer = COALESCE(EXCLUDED.last_answer, task_attempts.last_answer), updated_at = EXCLUDED.updated_at;

-- 6. Downloaded, inspected and stored (no SQL), then completed (sql/completeTask.ts): the task
--    succeeded with its result, its asset, the account's webhook setting and the event row
--    (`skipped`: the account has no webhook), COMMIT; then the freed slot's wake-up.
BEGIN;
UPDATE tasks SET status = 'succeeded', run_state = 'done', run_at = NULL, progress = 100,
  result = ('{"videos": [{"url": "http://127.0.0.1:40861/storage/results~' || ':p_id' || '~asset_pgb_' || :client_id || '_' || :r || '.mp4?X-Expires=1795554762&X-Signature=WM21xYmSACrPuYsMKfwlMqVE1PdWX6sBL51pcy_B-DU", "index": 0, "width": 320, "height": 180, "asset_id": "asset_pgb_' || :client_id || '_' || :r || '", "filename": "asset_pgb.mp4", "url_auth": "none", "mime_type": "video/mp4", "temporary": true, "duration_ms": 4000}]}')::jsonb,
  completed_at = :now, updated_at = :now, lease_owner = NULL, lease_expires_at = NULL
WHERE id = ':p_id' AND attempt = 1 AND status = 'in_progress' RETURNING *;
INSERT INTO assets (id, account_id, task_id, kind, storage_key, mime_type, filename, size_bytes, width, height,
  duration_ms, url, url_auth, expires_at, created_at)
VALUES ('asset_pgb_' || :client_id || '_' || :r, ':p_account_id', ':p_id', 'video',
  'results/' || ':p_id' || '/asset_pgb_' || :client_id || '_' || :r || '.mp4', 'video/mp4', 'asset_pgb.mp4',
  349836, 320, 180, 4000,
  'http://127.0.0.1:40861/storage/results~' || ':p_id' || '~asset_pgb_' || :client_id || '_' || :r || '.mp4?X-Expires=1795554762&X-Signature=WM21xYmSACrPuYsMKfwlMqVE1PdWX6sBL51pcy_B-DU',
  'none', :now + 86400, :now);
SELECT (webhook_url IS NOT NULL AND (webhook_enabled OR false)) AS deliver FROM accounts WHERE id = ':p_account_id';
INSERT INTO webhook_events (id, account_id, task_id, type, payload, status, next_attempt_at, created_at)
VALUES ('evt_pgb_' || :client_id || '_' || :r, ':p_account_id', ':p_id', 'video.task.succeeded',
  ('{"id":"evt_pgb_' || :client_id || '_' || :r || '","object":"event","api_version":"2026-07-17","type":"video.task.succeeded","created_at":1795468362,"data":{"object":{"id":"' || ':p_id' || '","model":"provy-famS-2.0-480p","status":"succeeded","progress":100,"error":null,"metadata":{},"created_at":1795468361,"started_at":1795468361,"completed_at":1795468362,"updated_at":1795468362,"object":"video.task","operation":"generation","result":{"videos":[{"url":"http://127.0.0.1:40861/storage/results~' || ':p_id' || '~asset_pgb.mp4?X-Expires=1795554762&X-Signature=WM21xYmSACrPuYsMKfwlMqVE1PdWX6sBL51pcy_B-DU","index":0,"width":320,"height":180,"asset_id":"asset_pgb","filename":"asset_pgb.mp4","url_auth":"none","mime_type":"video/mp4","temporary":true,"duration_ms":4000}]}}}}')::json,
  'skipped', :nowms, :now);
COMMIT;
SELECT pg_notify('tasks_queued', ':channel');
\endif
