import type { SqlClient } from "@effect/sql"
import type { ChargeRow, ChargeTerms } from "../../billing/ChargeRow.ts"
import type { PooledQuery } from "../../platform/PooledQuery.ts"
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
/** What `create_task` takes, named (its parameters' order is `createTaskParams`'). */
export interface CreateTask {
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

const CREATE_TASK = `SELECT * FROM create_task($1, $2, $3, $4::bigint, $5::boolean, $6::jsonb, $7::boolean, $8, $9,
  $10, $11, $12::jsonb, $13::integer, $14, $15::jsonb, $16, $17, $18::bigint, $19, $20::jsonb, $21::bigint)`

const createTaskParams = (create: CreateTask): ReadonlyArray<unknown> => [
  create.accountId,
  create.keyId,
  create.ledgerId,
  create.terms.micros,
  create.terms.useSubscription,
  create.terms.queuedLimits,
  create.allowLow,
  create.id,
  create.kind,
  create.model,
  create.operation,
  create.request,
  create.requestVersion,
  create.clientReferenceId,
  create.metadata,
  create.idempotencyKey,
  create.digest,
  create.now,
  create.channel,
  create.traceContext,
  create.cancelAt
]

/** The statement through the SqlClient: inside a transaction (the low-balance create's second run). */
export const createTask = (sql: SqlClient.SqlClient, create: CreateTask) =>
  sql.unsafe<CreateRow>(CREATE_TASK, createTaskParams(create))

/**
 * The statement on the pool (PooledQuery), for a create outside any
 * transaction, as almost every create is: one round trip without the
 * SqlClient's span, scope and compile per statement.
 */
export const createTaskPooled = (pooled: PooledQuery["Type"], create: CreateTask) =>
  pooled.rows<CreateRow>(CREATE_TASK, createTaskParams(create))
