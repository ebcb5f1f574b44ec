import type { SqlClient } from "@effect/sql"
import { Schema, Tracer } from "effect"
import { parseTraceparent } from "../../platform/TraceContext.ts"
import type { StoredRequest } from "../StoredRequest.ts"
import { TaskKind } from "../Task.ts"

/**
 * What a worker holds after a claim: the task and the attempt its writes are
 * guarded by. The request is as stored, not yet decoded (see StoredRequest.ts).
 */
export interface Claim {
  readonly id: string
  readonly accountId: string
  readonly kind: TaskKind
  readonly model: string
  /** The channel whose worker claimed it (set at creation: the model's first channel). */
  readonly channel: string
  readonly request: unknown
  readonly requestVersion: number
  readonly attempt: number
  readonly traceContext: { readonly traceparent?: string } | null
  readonly createdAt: number
}

/**
 * A claimed row as the queue's statements return it, decoded at the queue's
 * boundary (TaskQueue.ts), so what the engine runs on is what the schema
 * says, not what a cast assumed. Times are numbers (bigint columns are read
 * as numbers by both backends).
 */
export const ClaimRow = Schema.Struct({
  id: Schema.String,
  account_id: Schema.String,
  kind: TaskKind,
  model: Schema.String,
  channel: Schema.String,
  request: Schema.Unknown,
  request_version: Schema.Number,
  attempt: Schema.Number,
  trace_context: Schema.NullOr(Schema.Struct({ traceparent: Schema.optional(Schema.String) })),
  created_at: Schema.Number
})
export type ClaimRow = typeof ClaimRow.Type

/** A waiting (or polled) task taken by a poller: the claim and what polling it needs. */
export const WaitingRow = Schema.Struct({
  ...ClaimRow.fields,
  upstream_id: Schema.String,
  upstream_model: Schema.NullOr(Schema.String),
  submitted_at: Schema.Number,
  polls: Schema.Number,
  /** When storing its finished result first failed (ms); null while no store has failed. */
  store_since: Schema.NullOr(Schema.Number),
  /** When its last poll was sent (ms), by whichever replica; null before its first. */
  polled_at: Schema.NullOr(Schema.Number)
})
export type WaitingRow = typeof WaitingRow.Type

/** A `storing` task taken by the store retrier: the claim, its spool and since when it waits. */
export const StoringRow = Schema.Struct({
  ...ClaimRow.fields,
  spool_id: Schema.String,
  spool: Schema.Unknown,
  store_since: Schema.Number
})
export type StoringRow = typeof StoringRow.Type

export const toClaim = (row: ClaimRow): Claim => ({
  id: row.id,
  accountId: row.account_id,
  kind: row.kind,
  model: row.model,
  channel: row.channel,
  request: row.request,
  requestVersion: row.request_version,
  attempt: row.attempt,
  traceContext: row.trace_context,
  createdAt: row.created_at
})

/** A claim whose stored request decoded: what a run plans from. */
export type DecodedClaim = Omit<Claim, "kind" | "request"> & StoredRequest

/** The claim's guard: this task, this attempt, still running. A stale worker's write matches nothing. */
export const ownedBy = (sql: SqlClient.SqlClient, claim: Pick<Claim, "id" | "attempt">) =>
  sql`id = ${claim.id} AND attempt = ${claim.attempt} AND status = 'in_progress'`

/** The create request's span, so the task's trace holds its claim, generation (or submit and polls) and storing. */
export const parentSpan = (claim: Pick<Claim, "traceContext">) => {
  const context = claim.traceContext?.traceparent ? parseTraceparent(claim.traceContext.traceparent) : undefined
  return context === undefined ? undefined : Tracer.externalSpan(context)
}
