import type { SqlClient } from "@effect/sql"

export interface LossRow {
  readonly task_id: string
  readonly attempt: number
  readonly account_id: string
  readonly model: string
  readonly channel: string
  readonly upstream_id: string | null
  readonly created_at: number
  readonly cost_micros: number | null
  readonly usage: { readonly unit?: string; readonly quantity?: number; readonly reported?: boolean } | null
  readonly refunded: boolean
  readonly refunded_micros: number
  readonly charged_quantity: number | null
  readonly billed_refunded: boolean
  readonly mismatch: boolean
}

/**
 * Where the gateway lost money, attempt by attempt, over the window
 * (docs/operating.md, Losses): the provider billed the attempt while the
 * caller was refunded (a result storage refused for good, a cancel after the
 * provider started, an ambiguous create), or the usage the provider reported
 * differs from what the caller was charged for (seconds off by more than a
 * tenth and a second, or another number of images). Newest first, after the
 * cursor (an attempt's start, task and number); through the attempts' window
 * index, each joined with its task.
 */
export const lossRows = (
  sql: SqlClient.SqlClient,
  query: {
    readonly from: number
    readonly to: number
    readonly limit: number
    readonly before: { readonly createdAt: number; readonly taskId: string; readonly attempt: number } | undefined
  }
) =>
  sql<LossRow>`
    WITH attempts AS (
      SELECT a.task_id, a.attempt, t.account_id, t.model, a.channel, a.upstream_id, a.created_at, a.cost_micros,
        a.usage, t.refunded_at IS NOT NULL AS refunded,
        CASE WHEN t.refunded_at IS NULL THEN 0 ELSE t.charged_wallet_micros + t.charged_subscription_micros END
          AS refunded_micros,
        coalesce((t.request ->> 'duration')::numeric, (t.request ->> 'count')::numeric) AS charged_quantity,
        coalesce(a.billed, false) AND t.refunded_at IS NOT NULL AS billed_refunded,
        (a.usage ->> 'reported') = 'true' AND CASE a.usage ->> 'unit'
          WHEN 'second' THEN abs((a.usage ->> 'quantity')::numeric
            - (t.request ->> 'duration')::numeric) > greatest(1, 0.1 * (t.request ->> 'duration')::numeric)
          WHEN 'image' THEN (a.usage ->> 'quantity')::numeric <> (t.request ->> 'count')::numeric
          ELSE false END AS mismatch
      FROM task_attempts a JOIN tasks t ON t.id = a.task_id
      WHERE a.created_at >= ${query.from} AND a.created_at < ${query.to}
        ${
    query.before === undefined
      ? sql``
      : sql`AND (a.created_at, a.task_id, a.attempt) < (${query.before.createdAt}, ${query.before.taskId}, ${query.before.attempt})`
  }
    )
    SELECT * FROM attempts WHERE billed_refunded OR coalesce(mismatch, false)
    ORDER BY created_at DESC, task_id DESC, attempt DESC
    LIMIT ${query.limit + 1}`
