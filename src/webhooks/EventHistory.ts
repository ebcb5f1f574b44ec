import type { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { AccountNotFound } from "../accounts/Errors.ts"
import { UnknownEventCursor } from "./Errors.ts"

export type EventStatus = "pending" | "delivered" | "failed" | "skipped" | "filtered" | "held"

export interface EventFilter {
  readonly status: EventStatus | undefined
  readonly after: string | undefined
  readonly limit: number
  /** Only the events of this task (the console's task page). */
  readonly taskId?: string | undefined
}

interface EventRow {
  readonly id: string
  readonly type: string
  readonly task_id: string | null
  readonly status: EventStatus
  readonly next_attempt_at: number
  readonly created_at: number
  readonly completed_at: number | null
}

interface AttemptRow {
  readonly event_id: string
  readonly attempt: number
  readonly url: string | null
  readonly started_at: number
  readonly duration_ms: number | null
  readonly status_code: number | null
  readonly error: string | null
  readonly outcome: "sending" | "delivered" | "failed" | "interrupted"
}

/** An account's events, newest first, each with its attempts (admin API). */
export const listEventHistory = (sql: SqlClient.SqlClient, accountId: string, filter: EventFilter) =>
  Effect.gen(function*() {
    const [account] = yield* sql`SELECT id FROM accounts WHERE id = ${accountId}`
    if (account === undefined) return yield* AccountNotFound.of(accountId)
    let cursor: { seq: number } | undefined
    if (filter.after !== undefined) {
      ;[cursor] = yield* sql<{ seq: number }>`
        SELECT seq FROM webhook_events WHERE id = ${filter.after} AND account_id = ${accountId}`
      if (cursor === undefined) {
        return yield* new UnknownEventCursor({ message: `Unknown cursor "after": no event "${filter.after}".` })
      }
    }
    const rows = yield* sql<EventRow>`
      SELECT id, type, task_id, status, next_attempt_at, created_at, completed_at FROM webhook_events
      WHERE account_id = ${accountId}
        ${filter.status === undefined ? sql`` : sql`AND status = ${filter.status}`}
        ${filter.taskId === undefined ? sql`` : sql`AND task_id = ${filter.taskId}`}
        ${cursor === undefined ? sql`` : sql`AND seq < ${cursor.seq}`}
      ORDER BY seq DESC LIMIT ${filter.limit + 1}`
    const page = rows.slice(0, filter.limit)
    const attempts = page.length === 0 ? [] : yield* sql<AttemptRow>`
      SELECT event_id, attempt, url, started_at, duration_ms, status_code, error, outcome FROM webhook_attempts
      WHERE ${sql.in("event_id", page.map((r) => r.id))} ORDER BY event_id, attempt`
    return {
      object: "list" as const,
      data: page.map((row) => ({
        id: row.id,
        object: "webhook.event" as const,
        type: row.type,
        task_id: row.task_id,
        status: row.status,
        created_at: row.created_at,
        completed_at: row.completed_at,
        next_attempt_at: row.status === "pending" ? Math.ceil(row.next_attempt_at / 1000) : null,
        attempts: attempts.filter((a) => a.event_id === row.id).map((a) => ({
          attempt: a.attempt,
          started_at: Math.floor(a.started_at / 1000),
          outcome: a.outcome,
          status_code: a.status_code,
          error: a.error,
          duration_ms: a.duration_ms,
          url: a.url
        }))
      })),
      has_more: rows.length > filter.limit,
      first_id: page[0]?.id ?? null,
      last_id: page.at(-1)?.id ?? null
    }
  }).pipe(Effect.catchTag("SqlError", Effect.die), Effect.withSpan("Webhooks.listEvents"))
