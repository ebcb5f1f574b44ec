import type { SqlClient, Statement } from "@effect/sql"
import type { ClaimRow } from "../Claim.ts"
import type { ClaimPlan } from "../FairShare.ts"

/**
 * A claim of queued tasks (docs/engine.md, Claims and fair share), in three
 * statements of one transaction: the channel's lock, its lanes, then the
 * claim itself, planned between the two from the lanes (FairShare.ts).
 *
 * Counting and claiming in one statement would race between replicas (each
 * counts from a snapshot taken before the other's claim commits), so the
 * channel is locked for the transaction first: the statements that follow
 * take fresh snapshots, which see every earlier claim. The lock is held only
 * for the claim itself. `FOR UPDATE SKIP LOCKED` still keeps two claims from
 * taking the same row, and a task past its `Cancel-After` deadline is not
 * claimed: the deadline sweep (Deadlines.ts) ends it.
 */
export const lockChannel = (sql: SqlClient.SqlClient, channel: string) =>
  sql`SELECT pg_advisory_xact_lock(hashtextextended(${`tasks.channel:${channel}`}, 0))`

export interface LaneRow {
  readonly account_id: string
  readonly group_name: string
  readonly queued: number
  readonly in_flight: number
  readonly service: number
  readonly started_at: number | null
  readonly oldest: number | null
}

/**
 * The channel's lanes with work queued or in flight (`task_lanes`, kept by
 * migration 21's trigger), each with its account's group and its oldest
 * queued task's position and how much it was served lately: a row per active account, read through a partial
 * index, and one index probe per lane with work queued.
 */
export const activeLanes = (sql: SqlClient.SqlClient, channel: string) =>
  sql<LaneRow>`
    SELECT l.account_id, a.group_name, l.queued, l.in_flight, l.service, l.started_at,
      CASE WHEN l.queued > 0 THEN (
        SELECT t.seq FROM tasks t WHERE t.channel = l.channel AND t.account_id = l.account_id AND t.status = 'queued'
        ORDER BY t.seq LIMIT 1) END AS oldest
    FROM task_lanes l JOIN accounts a ON a.id = l.account_id
    WHERE l.channel = ${channel} AND (l.queued > 0 OR l.in_flight > 0)`

interface Claiming {
  readonly channel: string
  readonly workerId: string
  readonly now: number
  readonly leaseMs: number
}

/** The chosen rows `in_progress` under a new attempt number and a lease held by `workerId` until `now + leaseMs`. */
const claimRows = (sql: SqlClient.SqlClient, { leaseMs, now, workerId }: Claiming, chosen: Statement.Fragment) =>
  sql<ClaimRow>`
    UPDATE tasks
    SET status = 'in_progress', run_state = 'running', run_at = NULL, attempt = attempt + 1, lease_owner = ${workerId},
        lease_expires_at = ${now + leaseMs}, started_at = ${Math.floor(now / 1000)},
        updated_at = ${Math.floor(now / 1000)}
    WHERE id IN (${chosen})
    RETURNING id, account_id, kind, model, channel, request, request_version, attempt, trace_context, created_at`

/** Each account's `n` oldest queued tasks on the channel, as the plan says. */
export const claimPlanned = (sql: SqlClient.SqlClient, claiming: Claiming, plan: ClaimPlan) =>
  claimRows(
    sql,
    claiming,
    sql`
      SELECT t.id FROM jsonb_to_recordset(${JSON.stringify(plan)}::jsonb) AS p(account text, n int)
      CROSS JOIN LATERAL (
        SELECT id FROM tasks
        WHERE channel = ${claiming.channel} AND account_id = p.account AND status = 'queued'
          AND (cancel_at IS NULL OR cancel_at > ${claiming.now})
        ORDER BY seq LIMIT p.n
        FOR UPDATE SKIP LOCKED) t`
  )

/** Up to `limit` of the channel's oldest queued tasks, first come first served, but none of the accounts `capped`. */
export const claimOldest = (
  sql: SqlClient.SqlClient,
  claiming: Claiming,
  limit: number,
  capped: ReadonlyArray<string>
) =>
  claimRows(
    sql,
    claiming,
    sql`
      SELECT id FROM tasks
      WHERE status = 'queued' AND channel = ${claiming.channel} AND (cancel_at IS NULL OR cancel_at > ${claiming.now})
        AND NOT (${JSON.stringify(capped)}::jsonb ? account_id)
      ORDER BY seq LIMIT ${limit}
      FOR UPDATE SKIP LOCKED`
  )
