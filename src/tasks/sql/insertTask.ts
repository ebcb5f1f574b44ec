import type { SqlClient } from "@effect/sql"
import type { ChargeSplit } from "../../billing/Billing.ts"
import { CURRENT_VERSION } from "../StoredRequest.ts"
import type { TaskKind } from "../Task.ts"
import { taskColumns, type TaskRow } from "../TaskRow.ts"

/** What a create hands the store: the task and what it costs. */
export interface NewTask {
  readonly accountId: string
  readonly kind: TaskKind
  readonly model: string
  readonly operation: string
  /** The validated request the engine will execute. */
  readonly request: unknown
  readonly clientReferenceId: string | null
  readonly metadata: Record<string, unknown> | null
  readonly idempotencyKey: string | null
  /** Digest of the request content, compared when an Idempotency-Key is reused. */
  readonly digest: string
  readonly chargeMicros: number
  readonly subscriptionAllowed: boolean
  /** The provider channel whose workers run it. */
  readonly channel: string
  /** W3C trace context of the create request, so the engine's spans join its trace. */
  readonly traceparent: string | null
  /** The caller's deadline (`Cancel-After`) in seconds from now; null for none. */
  readonly cancelAfterSeconds?: number | null | undefined
}

const RETURNED = taskColumns()

/**
 * A new task, `queued`, with what its pre-charge took (refunded exactly on
 * failure). With an Idempotency-Key this account already used, nothing is
 * inserted and no row comes back: the caller replays the original. Times
 * are seconds, but for the deadline (ms from `nowMs`).
 */
export const insertTask = (
  sql: SqlClient.SqlClient,
  id: string,
  task: NewTask,
  charged: ChargeSplit,
  nowMs: number
) => {
  const now = Math.floor(nowMs / 1000)
  return sql<TaskRow>`
    INSERT INTO tasks (id, account_id, kind, model, operation, status, progress, request, request_version,
      client_reference_id, metadata, idempotency_key, request_digest, created_at, updated_at, channel, trace_context,
      charged_wallet_micros, charged_subscription_micros, cancel_at)
    VALUES (${id}, ${task.accountId}, ${task.kind}, ${task.model}, ${task.operation}, 'queued', 0,
      ${JSON.stringify(task.request)}::jsonb, ${CURRENT_VERSION}, ${task.clientReferenceId},
      ${task.metadata === null ? null : JSON.stringify(task.metadata)}::jsonb,
      ${task.idempotencyKey}, ${task.digest}, ${now}, ${now}, ${task.channel},
      ${task.traceparent === null ? null : JSON.stringify({ traceparent: task.traceparent })}::jsonb,
      ${charged.walletMicros}, ${charged.subscriptionMicros},
      ${task.cancelAfterSeconds == null ? null : nowMs + task.cancelAfterSeconds * 1000})
    ON CONFLICT (account_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
    RETURNING ${sql.literal(RETURNED)}`
}
