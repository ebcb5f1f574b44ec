-- The gateway's statement for one create (src/tasks/TaskStore.ts create, src/tasks/sql/createTask.ts:
-- `create_task`, migration 28, which checks the account's queue, the key's spend and the balances,
-- inserts the task and takes the charge under the account's lock, a transaction of its own), run by
-- bench/create-path.ts with -D request, channel, micros, and lo and hi: the account and its model
-- key are bench_accounts' row n, drawn from lo to hi (0 to 0: the one hot account; 1 to 100: spread
-- over 100 accounts).
\set r random(1, 999999999999)
\set now 1800000000
-- The account and key, as the gateway's keys are used in turn.
\set k random(:lo, :hi)
SELECT id AS account, key_id AS key FROM bench_accounts WHERE n = :k \gset
-- No group has max_queued (the gateway's default groups.json): the limits are the empty object.
SELECT * FROM create_task(':account', ':key', 'led_pgb_' || :client_id || '_' || :r, :micros::bigint, false,
  '{}'::jsonb, false, 'task_pgb_' || :client_id || '_' || :r, 'video', 'provy-famS-2.0-480p', 'generation',
  ':request'::jsonb, 1, NULL, NULL::jsonb, NULL, NULL, :now::bigint, ':channel', NULL::jsonb, NULL::bigint);
-- After the commit, as the gateway does: the wake-up for idle workers.
SELECT pg_notify('tasks_queued', ':channel');
