import type { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/** Webhook events not yet delivered or given up: all of them, those due now, and how late the oldest due one is. */
export interface WebhookBacklog {
  readonly pending: number
  readonly due: number
  /** `next_attempt_at` (ms) of the oldest event due now, or null when none is. */
  readonly oldestDue: number | null
}

/** For the metrics gauges: one read of the outbox's pending events (its `webhook_events_due` index). */
export const webhookBacklog = (sql: SqlClient.SqlClient, now: number) =>
  Effect.map(
    sql<{ pending: number; due: number; oldest_due: number | string | null }>`
      SELECT count(*)::int AS pending, count(*) FILTER (WHERE next_attempt_at <= ${now})::int AS due,
        min(next_attempt_at) FILTER (WHERE next_attempt_at <= ${now})::float8 AS oldest_due
      FROM webhook_events WHERE status = 'pending'`,
    ([row]): WebhookBacklog => ({
      pending: Number(row?.pending ?? 0),
      due: Number(row?.due ?? 0),
      oldestDue: row?.oldest_due == null ? null : Number(row.oldest_due)
    })
  )
