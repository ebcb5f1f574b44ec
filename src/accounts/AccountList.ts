import type { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { toCredits } from "../billing/Money.ts"

/** One account in the operator's list: who, which group, and the balances. */
export interface AccountSummary {
  readonly id: string
  readonly object: "account"
  readonly name: string
  readonly group: string
  readonly wallet_credits: number
  readonly subscription_credits: number
  readonly created_at: number
}

interface Row {
  readonly id: string
  readonly name: string
  readonly group_name: string
  readonly wallet_micros: number
  readonly subscription_micros: number
  readonly created_at: number
}

/** Every account, newest first, a page at a time; `after` is the previous page's last id. */
export const listAccounts = (
  sql: SqlClient.SqlClient,
  page: { readonly after?: string | undefined; readonly limit: number }
) =>
  Effect.gen(function*() {
    const [cursor] = page.after === undefined
      ? [undefined]
      : yield* sql<{ created_at: number; id: string }>`SELECT created_at, id FROM accounts WHERE id = ${page.after}`
    if (page.after !== undefined && cursor === undefined) return { data: [], hasMore: false }
    const rows = yield* sql<Row>`
      SELECT id, name, group_name, wallet_micros, subscription_micros, created_at FROM accounts
      ${cursor === undefined ? sql`` : sql`WHERE (created_at, id) < (${cursor.created_at}, ${cursor.id})`}
      ORDER BY created_at DESC, id DESC LIMIT ${page.limit + 1}`
    const data: Array<AccountSummary> = rows.slice(0, page.limit).map((r) => ({
      id: r.id,
      object: "account",
      name: r.name,
      group: r.group_name,
      wallet_credits: toCredits(Number(r.wallet_micros)),
      subscription_credits: toCredits(Number(r.subscription_micros)),
      created_at: Number(r.created_at)
    }))
    return { data, hasMore: rows.length > page.limit }
  }).pipe(Effect.orDie)
