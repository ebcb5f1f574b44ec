import type { SqlClient } from "@effect/sql"

export interface AttemptRecord {
  readonly taskId: string
  readonly attempt: number
  readonly channel: string
  readonly upstreamId: string | null
  /** `submitted`, `waiting`, `succeeded`, `failed`, `submit_failed`. */
  readonly outcome: string
  /** The upstream's last answer about the task (its JSON, or the error), for operators only. */
  readonly lastAnswer: unknown
}

/** One attempt's row in `task_attempts`, written again as it moves (the upstream id is kept once known). */
export const recordAttempt = (sql: SqlClient.SqlClient, record: AttemptRecord, now: number) =>
  sql`
    INSERT INTO task_attempts (task_id, attempt, channel, upstream_id, outcome, last_answer, created_at, updated_at)
    VALUES (${record.taskId}, ${record.attempt}, ${record.channel}, ${record.upstreamId}, ${record.outcome},
      ${record.lastAnswer === undefined ? null : JSON.stringify(record.lastAnswer)}::jsonb, ${now}, ${now})
    ON CONFLICT (task_id, attempt) DO UPDATE SET
      upstream_id = COALESCE(EXCLUDED.upstream_id, task_attempts.upstream_id), outcome = EXCLUDED.outcome,
      last_answer = COALESCE(EXCLUDED.last_answer, task_attempts.last_answer), updated_at = EXCLUDED.updated_at`
