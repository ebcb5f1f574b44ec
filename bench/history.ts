/**
 * A long history of tasks for the benchmarks that read one (recent-windows,
 * usage-report): written straight into a database migrated up to the
 * migration a benchmark measures, as SQL statements.
 */

export const DAYS = 90
export const CHANNELS = ["sandbox", "byteplus", "vertex", "kling"]
export const MODELS = ["provy-famS-2.0-480p", "provx-famV-3.1-fast-720p", "provx-famK-3.0-720p", "provy-famS-2.5-480p"]

/**
 * HISTORY tasks over the last DAYS days, newest last (as inserted): 90 %
 * succeeded, 8 % failed with a refund, the rest still queued; a charge per
 * task, one attempt per started task, one in twenty ended by an upstream's
 * answer. Deterministic, so both databases hold the very same rows.
 */
export const fillHistory = (nowS: number, HISTORY: number) => [
  `INSERT INTO accounts (id, name, group_name, wallet_micros, created_at, updated_at)
    SELECT 'acct_' || n, 'bench ' || n, 'default', 1000000000000000, ${nowS}, ${nowS} FROM generate_series(0, 100) n`,
  `CREATE TABLE bench_accounts (n int PRIMARY KEY, id text NOT NULL)`,
  `INSERT INTO bench_accounts SELECT n, 'acct_' || n FROM generate_series(0, 100) n`,
  `INSERT INTO tasks (id, account_id, kind, model, operation, status, progress, request, created_at, updated_at,
      started_at, completed_at, channel, attempt, run_state, error, charged_wallet_micros, refunded_at)
    SELECT 'task_' || g, 'acct_' || (g % 101), 'video', (ARRAY[${
    MODELS.map((m) => `'${m}'`).join(", ")
  }])[1 + g % 7 % 4],
      'generation', s.status,
      CASE WHEN s.status = 'queued' THEN 0 ELSE 100 END, '{"prompt":"history"}'::jsonb, t.created, t.created,
      CASE WHEN s.status = 'queued' THEN NULL ELSE t.created + 2 END,
      CASE WHEN s.status = 'queued' THEN NULL ELSE t.created + 30 + (g::bigint * 7919) % 600 END,
      (ARRAY[${CHANNELS.map((c) => `'${c}'`).join(", ")}])[1 + g % ${CHANNELS.length}],
      CASE WHEN s.status = 'queued' THEN 0 ELSE 1 END,
      CASE WHEN s.status = 'queued' THEN 'available' ELSE 'done' END,
      CASE WHEN s.status = 'failed' THEN '{"code":"video_task_failed","message":"failed"}'::jsonb END,
      500000,
      CASE WHEN s.status = 'failed' THEN t.created + 30 + (g::bigint * 7919) % 600 END
    FROM generate_series(1, ${HISTORY}) g,
      LATERAL (SELECT ${nowS} - ((${HISTORY} - g)::bigint * ${DAYS * 86_400} / ${HISTORY}) AS created) t,
      LATERAL (SELECT CASE WHEN g % 100 < 90 THEN 'succeeded' WHEN g % 100 < 98 THEN 'failed' ELSE 'queued' END
        AS status) s`,
  `INSERT INTO ledger (id, account_id, task_id, kind, wallet_micros, created_at)
    SELECT 'led_c_' || id, account_id, id, 'charge', -500000, created_at FROM tasks`,
  `INSERT INTO ledger (id, account_id, task_id, kind, wallet_micros, created_at)
    SELECT 'led_r_' || id, account_id, id, 'refund', 500000, completed_at FROM tasks WHERE status = 'failed'`,
  `INSERT INTO task_attempts (task_id, attempt, channel, outcome, created_at, updated_at, upstream_status,
      upstream_code, upstream_message)
    SELECT id, 1, channel, status, started_at, completed_at,
      CASE WHEN seq % 20 = 0 THEN 429 END, CASE WHEN seq % 20 = 0 THEN 'RateLimitExceeded' END,
      CASE WHEN seq % 20 = 0 THEN 'slow down' END
    FROM tasks WHERE status <> 'queued'`
]
