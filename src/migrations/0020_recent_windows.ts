/**
 * The console's overview and the operators' channel view read the last
 * hours and days of `tasks`, `ledger` and `task_attempts` by time
 * (console/Overview.ts, ops/ChannelView.ts). Without an index of their own
 * each read scanned the whole table, so its cost grew with the history kept;
 * with these it grows with the window read. Each costs one more index entry
 * per task created (`tasks_created`, `ledger_created` through the charge),
 * per task ended (`tasks_completed`, `ledger_created` through a refund) and
 * per attempt ended by an upstream's answer (`task_attempts_upstream_answer`);
 * bench/overview-queries.ts has the figures of both sides.
 */
export default [
  `CREATE INDEX tasks_created ON tasks (created_at)`,
  `CREATE INDEX tasks_completed ON tasks (completed_at) WHERE status IN ('succeeded', 'failed')`,
  `CREATE INDEX ledger_created ON ledger (created_at)`,
  `CREATE INDEX task_attempts_upstream_answer ON task_attempts (channel, updated_at)
    WHERE upstream_status IS NOT NULL OR upstream_code IS NOT NULL`
]
