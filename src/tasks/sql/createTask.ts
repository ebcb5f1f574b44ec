import type { SqlClient } from "@effect/sql"
import type { ChargeRow, ChargeTerms } from "../../billing/ChargeRow.ts"
import type { TaskRow } from "../TaskRow.ts"

/** What `create_task` answers: the charge's outcome, and the task as the API reads it once inserted. */
export interface CreateRow extends ChargeRow {
  readonly task: TaskRow | null
}

/**
 * A new task, `queued`, and its pre-charge in one statement (`create_task`,
 * migration 28): the account locked, its queue, the key's spend and the
 * balances checked, the task inserted (unless this account already used
 * its Idempotency-Key: `key_taken`), then debited. `allowLow` false answers
 * `balance_low`, writing nothing, for a charge that would cross the
 * account's low-balance threshold: the caller makes it again, allowed, in
 * the transaction that records the event. Times are seconds, but for the
 * deadline (`cancelAt`, ms).
 */
export const createTask = (
  sql: SqlClient.SqlClient,
  create: {
    readonly id: string
    readonly ledgerId: string
    readonly accountId: string
    readonly keyId: string
    readonly terms: ChargeTerms
    readonly allowLow: boolean
    readonly kind: string
    readonly model: string
    readonly operation: string
    readonly request: string
    readonly requestVersion: number
    readonly clientReferenceId: string | null
    readonly metadata: string | null
    readonly idempotencyKey: string | null
    readonly digest: string
    readonly now: number
    readonly channel: string
    readonly traceContext: string | null
    readonly cancelAt: number | null
  }
) =>
  sql<CreateRow>`SELECT * FROM create_task(${create.accountId}, ${create.keyId}, ${create.ledgerId},
    ${create.terms.micros}::bigint, ${create.terms.useSubscription}::boolean, ${create.terms.queuedLimits}::jsonb,
    ${create.allowLow}::boolean, ${create.id}, ${create.kind}, ${create.model}, ${create.operation},
    ${create.request}::jsonb, ${create.requestVersion}::integer, ${create.clientReferenceId}, ${create.metadata}::jsonb,
    ${create.idempotencyKey}, ${create.digest}, ${create.now}::bigint, ${create.channel}, ${create.traceContext}::jsonb,
    ${create.cancelAt}::bigint)`
