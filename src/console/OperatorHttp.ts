import { SqlClient } from "@effect/sql"
import { Clock, Effect } from "effect"
import { CreateAccountRequest, CreateKeyRequest, CreditsRequest } from "../accounts/Account.ts"
import { listAccounts as listAccountRows } from "../accounts/AccountList.ts"
import { Accounts } from "../accounts/Accounts.ts"
import { ledgerPage } from "../billing/LedgerQuery.ts"
import { readJson } from "../platform/http/Body.ts"
import { listPage } from "../platform/http/ListEnvelope.ts"
import { readQuery } from "../platform/http/ListQuery.ts"
import { Usage } from "../usage/Usage.ts"
import { MoneyParams, PageParams } from "./Api.ts"

/** The operator's pages reuse the admin API's services; the operator's session is checked by middleware (Api.ts). */

export const listAccounts = Effect.gen(function*() {
  const p = yield* readQuery(PageParams)
  const page = yield* listAccountRows(yield* SqlClient.SqlClient, { after: p.after, limit: p.limit ?? 50 })
  return listPage(page.data, page.hasMore)
})

export const createAccount = Effect.flatMap(
  readJson(CreateAccountRequest),
  (request) => Effect.flatMap(Accounts, (accounts) => accounts.create(request))
)

/** One account: balances, ledger totals and its keys (hints only; a key's plaintext is shown once, at creation). */
export const getAccount = (id: string) => Effect.flatMap(Accounts, (accounts) => accounts.detail(id))

export const accountLedger = (id: string) =>
  Effect.gen(function*() {
    yield* (yield* Accounts).detail(id)
    const p = yield* readQuery(PageParams)
    const page = yield* ledgerPage(yield* SqlClient.SqlClient, id, { after: p.after, limit: p.limit ?? 50 })
    return listPage(page.data, page.hasMore)
  })

export const addCredits = (id: string) =>
  Effect.gen(function*() {
    const request = yield* readJson(CreditsRequest)
    return yield* (yield* Accounts).addCredits(id, request)
  })

export const createKey = (id: string) =>
  Effect.gen(function*() {
    const request = yield* readJson(CreateKeyRequest)
    return yield* (yield* Accounts).issueKey(id, request)
  })

export const disableKey = (id: string) => Effect.flatMap(Accounts, (accounts) => accounts.disableKey(id))

/**
 * The Money page: the usage report by day over the last `days` (30 by
 * default) and the first page of the window's losses, from the same service
 * as the admin API's.
 */
export const money = Effect.gen(function*() {
  const { days = 30 } = yield* readQuery(MoneyParams)
  const usage = yield* Usage
  const to = Math.floor((yield* Clock.currentTimeMillis) / 1000)
  const from = (Math.floor(to / 86_400) - days + 1) * 86_400
  const report = yield* usage.report({ from, to, group_by: "day", limit: 366 }, "json")
  const losses = yield* usage.losses({ from, to, limit: 50 })
  return {
    object: "console.money" as const,
    from,
    to,
    days: report.lines,
    losses: losses.lines,
    more_losses: losses.nextCursor !== null
  }
}).pipe(
  // The window is made here, within what a report takes: a refusal would be a defect of ours.
  Effect.catchTag("InvalidUsageQuery", Effect.die)
)
