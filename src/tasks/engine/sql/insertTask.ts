import type { SqlClient } from "@effect/sql"
import type { ChargeSplit } from "../../../billing/Billing.ts"
import { CURRENT_VERSION } from "../../StoredRequest.ts"
import { taskColumns, type TaskRow } from "../../TaskRow.ts"
import type { NewTask } from "../../TaskStore.ts"

const RETURNED = taskColumns()

/**
 * A new task, `queued`, with what its pre-charge took (refunded exactly on
 * failure). With an Idempotency-Key this account already used, nothing is
 * inserted and no row comes back: the caller replays the original.
 */
export const insertTask = (
  sql: SqlClient.SqlClient,
  id: string,
  task: NewTask,
  charged: ChargeSplit,
  now: number
) =>
  sql<TaskRow>`
    INSERT INTO tasks (id, account_id, kind, model, operation, status, progress, request, request_version,
      client_reference_id, metadata, idempotency_key, request_digest, created_at, updated_at, channel, trace_context,
      charged_wallet_micros, charged_subscription_micros)
    VALUES (${id}, ${task.accountId}, ${task.kind}, ${task.model}, ${task.operation}, 'queued', 0,
      ${JSON.stringify(task.request)}::jsonb, ${CURRENT_VERSION}, ${task.clientReferenceId},
      ${task.metadata === null ? null : JSON.stringify(task.metadata)}::jsonb,
      ${task.idempotencyKey}, ${task.digest}, ${now}, ${now}, ${task.channel},
      ${task.traceparent === null ? null : JSON.stringify({ traceparent: task.traceparent })}::jsonb,
      ${charged.walletMicros}, ${charged.subscriptionMicros})
    ON CONFLICT (account_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
    RETURNING ${sql.literal(RETURNED)}`
