import type { SqlClient } from "@effect/sql"
import type { UpstreamAnswerDetail } from "../../../channel/contract/Generation.ts"
import type { AttemptCost } from "../AttemptCost.ts"

export interface AttemptRecord {
  readonly taskId: string
  readonly attempt: number
  readonly channel: string
  readonly upstreamId: string | null
  /**
   * Where the attempt is, or why it ended (docs/operating.md, The operator's view of a task): `running`
   * (in this process), `pacing` (a submit waiting for its slot in the channel's budget), `submitting`, `waiting`, `succeeded`, `failed`, `refused`, `ambiguous`, `failover`,
   * `deadline`, `no_output`.
   */
  readonly outcome: string
  /** The upstream's last answer about the task (its JSON, or the error), for operators only. */
  readonly lastAnswer: unknown
  /** The upstream's own status, code and message that ended the attempt, when it said something. */
  readonly upstream?: UpstreamAnswerDetail | undefined
  /**
   * What the attempt cost at its provider, once known (written by recordCost.ts, first account standing),
   * with the public model it is counted under.
   */
  readonly cost?: AttemptCost & { readonly model: string } | undefined
}

/**
 * One attempt's row in `task_attempts`, written again as it moves: the upstream id and the upstream's
 * own answer are kept once known, so a later step that has none does not erase them.
 */
export const recordAttempt = (sql: SqlClient.SqlClient, record: AttemptRecord, now: number) =>
  sql`
    INSERT INTO task_attempts (task_id, attempt, channel, upstream_id, outcome, last_answer, created_at, updated_at,
      upstream_status, upstream_code, upstream_message)
    VALUES (${record.taskId}, ${record.attempt}, ${record.channel}, ${record.upstreamId}, ${record.outcome},
      ${record.lastAnswer === undefined ? null : JSON.stringify(record.lastAnswer)}::jsonb, ${now}, ${now},
      ${record.upstream?.status ?? null}, ${record.upstream?.code ?? null}, ${record.upstream?.message ?? null})
    ON CONFLICT (task_id, attempt) DO UPDATE SET
      upstream_id = COALESCE(EXCLUDED.upstream_id, task_attempts.upstream_id), outcome = EXCLUDED.outcome,
      last_answer = COALESCE(EXCLUDED.last_answer, task_attempts.last_answer), updated_at = EXCLUDED.updated_at,
      upstream_status = COALESCE(EXCLUDED.upstream_status, task_attempts.upstream_status),
      upstream_code = COALESCE(EXCLUDED.upstream_code, task_attempts.upstream_code),
      upstream_message = COALESCE(EXCLUDED.upstream_message, task_attempts.upstream_message)`
