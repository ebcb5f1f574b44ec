import { HttpRouter } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import { CreateAccountRequest, CreateKeyRequest, CreditsRequest } from "../accounts/Account.ts"
import { listAccounts as listAccountRows } from "../accounts/AccountList.ts"
import { Accounts } from "../accounts/Accounts.ts"
import { ledgerPage } from "../billing/LedgerQuery.ts"
import { readJson } from "../platform/http/Body.ts"
import { listPage } from "../platform/http/ListEnvelope.ts"
import { PageLimit, readQuery } from "../platform/http/ListQuery.ts"
import { currentSession, requireOperator, writableSession } from "./ConsoleAuth.ts"
import { json } from "./Respond.ts"

/** The operator's pages reuse the admin API's services; every one needs an operator session. */
const operator = Effect.flatMap(currentSession, requireOperator)
const writableOperator = Effect.flatMap(writableSession, requireOperator)

const PageParams = Schema.Struct({
  after: Schema.optional(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200))),
  limit: Schema.optional(PageLimit)
})

const pathId = Effect.map(HttpRouter.params, (p) => p.id ?? "")

export const listAccounts = Effect.gen(function*() {
  yield* operator
  const p = yield* readQuery(PageParams)
  const page = yield* listAccountRows(yield* SqlClient.SqlClient, { after: p.after, limit: p.limit ?? 50 })
  return json(listPage(page.data, page.hasMore))
})

export const createAccount = Effect.gen(function*() {
  yield* writableOperator
  const request = yield* readJson(CreateAccountRequest)
  return json(yield* (yield* Accounts).create(request), 201)
})

/** One account: balances, ledger totals and its keys (hints only; a key's plaintext is shown once, at creation). */
export const getAccount = Effect.gen(function*() {
  yield* operator
  return json(yield* (yield* Accounts).detail(yield* pathId))
})

export const accountLedger = Effect.gen(function*() {
  yield* operator
  const id = yield* pathId
  yield* (yield* Accounts).detail(id)
  const p = yield* readQuery(PageParams)
  const page = yield* ledgerPage(yield* SqlClient.SqlClient, id, { after: p.after, limit: p.limit ?? 50 })
  return json(listPage(page.data, page.hasMore))
})

export const addCredits = Effect.gen(function*() {
  yield* writableOperator
  const request = yield* readJson(CreditsRequest)
  return json(yield* (yield* Accounts).addCredits(yield* pathId, request))
})

export const createKey = Effect.gen(function*() {
  yield* writableOperator
  const request = yield* readJson(CreateKeyRequest)
  return json(yield* (yield* Accounts).issueKey(yield* pathId, request), 201)
})

export const disableKey = Effect.gen(function*() {
  yield* writableOperator
  return json(yield* (yield* Accounts).disableKey(yield* pathId))
})
