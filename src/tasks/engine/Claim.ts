import type { SqlClient } from "@effect/sql"
import { Tracer } from "effect"
import { parseTraceparent } from "../../platform/TraceContext.ts"
import type { StoredRequest } from "../StoredRequest.ts"
import type { TaskKind } from "../Task.ts"

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

export interface ClaimRow {
  readonly id: string
  readonly account_id: string
  readonly kind: TaskKind
  readonly model: string
  readonly channel: string
  readonly request: unknown
  readonly request_version: number
  readonly attempt: number
  readonly trace_context: Claim["traceContext"]
  readonly created_at: number
}

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
