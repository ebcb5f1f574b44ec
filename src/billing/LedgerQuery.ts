import type { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { toCredits } from "./Money.ts"

/** A ledger line as the console shows it: amounts in credits, signed (a charge is negative). */
export interface LedgerLine {
  readonly id: string
  readonly object: "ledger.entry"
  readonly kind: "credit" | "charge" | "refund"
  readonly task_id: string | null
  /** The model token whose create made a charge; null for other lines. */
  readonly key_id: string | null
  readonly wallet_credits: number
  readonly subscription_credits: number
  readonly note: string | null
  readonly created_at: number
}

interface LedgerRow {
  readonly id: string
  readonly kind: LedgerLine["kind"]
  readonly task_id: string | null
  readonly key_id: string | null
  readonly wallet_micros: number
  readonly subscription_micros: number
  readonly note: string | null
  readonly created_at: number
}

const toLine = (row: LedgerRow): LedgerLine => ({
  id: row.id,
  object: "ledger.entry",
  kind: row.kind,
  task_id: row.task_id,
  key_id: row.key_id,
  wallet_credits: toCredits(Number(row.wallet_micros)),
  subscription_credits: toCredits(Number(row.subscription_micros)),
  note: row.note,
  created_at: Number(row.created_at)
})

/** The lines of one task of an account (its pre-charge, and its refund if it failed), oldest first. */
export const ledgerOfTask = (sql: SqlClient.SqlClient, accountId: string, taskId: string) =>
  sql<LedgerRow>`
    SELECT id, kind, task_id, key_id, wallet_micros, subscription_micros, note, created_at FROM ledger
    WHERE account_id = ${accountId} AND task_id = ${taskId}
    ORDER BY created_at, id`.pipe(Effect.map((rows) => rows.map(toLine)), Effect.orDie)

/**
 * An account's ledger, newest first; `after` is the last line of the previous
 * page (ids are random, so the order is by time, then id). Unknown cursors
 * give an empty page rather than an error: the console builds them itself.
 */
export const ledgerPage = (
  sql: SqlClient.SqlClient,
  accountId: string,
  page: {
    readonly after?: string | undefined
    readonly limit: number
    /** Only lines written at or after `from` and before `to` (Unix seconds), when given. */
    readonly from?: number | undefined
    readonly to?: number | undefined
  }
) =>
  Effect.gen(function*() {
    const [cursor] = page.after === undefined
      ? [undefined]
      : yield* sql<{ created_at: number; id: string }>`
        SELECT created_at, id FROM ledger WHERE id = ${page.after} AND account_id = ${accountId}`
    if (page.after !== undefined && cursor === undefined) return { data: [], hasMore: false }
    const rows = yield* sql<LedgerRow>`
      SELECT id, kind, task_id, key_id, wallet_micros, subscription_micros, note, created_at FROM ledger
      WHERE account_id = ${accountId}
        ${cursor === undefined ? sql`` : sql`AND (created_at, id) < (${cursor.created_at}, ${cursor.id})`}
        ${page.from === undefined ? sql`` : sql`AND created_at >= ${page.from}`}
        ${page.to === undefined ? sql`` : sql`AND created_at < ${page.to}`}
      ORDER BY created_at DESC, id DESC LIMIT ${page.limit + 1}`
    return { data: rows.slice(0, page.limit).map(toLine), hasMore: rows.length > page.limit }
  }).pipe(Effect.orDie)
