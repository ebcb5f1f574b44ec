import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { BodyErrors, errors, httpFailures, ResourceId } from "../platform/http/ErrorContract.ts"
import { ListEnvelope } from "../platform/http/ListEnvelope.ts"
import { jsonBody } from "../platform/http/OpenApiBody.ts"
import {
  Account,
  AccountDetail,
  Balances,
  CreateAccountRequest,
  CreateKeyRequest,
  CreditsRequest,
  IssuedKey,
  KeyLimits,
  KeyLimitsRequest,
  LowBalance,
  LowBalanceRequest
} from "./Account.ts"
import { AccountNotFound, InvalidAccountRequest, KeyNotFound } from "./Errors.ts"
import { AdminAuth } from "./Security.ts"

/**
 * The operator's API (docs/operating.md, The admin API). Request bodies are
 * read and checked by the handlers so that every failure has the spec's error
 * body.
 */
const accountPath = Schema.Struct({ id: ResourceId(() => new AccountNotFound({ message: "No such account." })) })
const keyPath = Schema.Struct({ key_id: ResourceId(() => new KeyNotFound({ message: "No such key." })) })

const NoAccount = errors(AccountNotFound)

/** A line of the ledger as the operator lists it: amounts in credits, signed (a charge is negative). */
export const LedgerEntry = Schema.Struct({
  id: Schema.String,
  object: Schema.Literal("ledger.entry"),
  kind: Schema.Literal("credit", "charge", "refund"),
  task_id: Schema.NullOr(Schema.String),
  key_id: Schema.NullOr(Schema.String),
  wallet_credits: Schema.Number,
  subscription_credits: Schema.Number,
  note: Schema.NullOr(Schema.String),
  created_at: Schema.Number
})
export const LedgerPage = ListEnvelope(LedgerEntry)

/** The ledger listing's query, read by hand by its handler. */
export const LedgerParams = Schema.Struct({
  from: Schema.optional(Schema.NumberFromString.pipe(Schema.int(), Schema.nonNegative())),
  to: Schema.optional(Schema.NumberFromString.pipe(Schema.int(), Schema.nonNegative())),
  limit: Schema.optional(Schema.NumberFromString.pipe(Schema.int(), Schema.between(1, 1000))),
  cursor: Schema.optional(Schema.String)
})
/** Changing an account: it must exist, and the change must be possible (a known group, a configured webhook, no negative balance). */
const AccountChange = errors(AccountNotFound, InvalidAccountRequest)

export class AdminApi extends HttpApiGroup.make("admin")
  .add(
    HttpApiEndpoint.post("createAccount", "/admin/v1/accounts").addSuccess(Account, { status: 201 })
      .addError(BodyErrors).addError(errors(InvalidAccountRequest))
      .annotate(OpenApi.Override, jsonBody(CreateAccountRequest))
  )
  .add(
    HttpApiEndpoint.get("getAccount", "/admin/v1/accounts/:id").setPath(accountPath).addSuccess(AccountDetail).addError(
      NoAccount
    )
  )
  .add(
    HttpApiEndpoint.post("createKey", "/admin/v1/accounts/:id/keys").setPath(accountPath)
      .addSuccess(IssuedKey, { status: 201 })
      .addError(BodyErrors).addError(AccountChange)
      .annotate(OpenApi.Override, jsonBody(CreateKeyRequest))
  )
  .add(
    HttpApiEndpoint.post("disableKey", "/admin/v1/keys/:key_id/disable")
      .setPath(keyPath)
      .addError(errors(KeyNotFound))
      .addSuccess(Schema.Struct({
        id: Schema.String,
        object: Schema.Literal("api_key"),
        kind: Schema.Literal("model", "resource"),
        disabled: Schema.Boolean,
        disabled_at: Schema.Number
      }))
  )
  .add(
    HttpApiEndpoint.post("addCredits", "/admin/v1/accounts/:id/credits").setPath(accountPath)
      .addSuccess(Schema.Struct({ object: Schema.Literal("balances"), account_id: Schema.String, ...Balances.fields }))
      .addError(BodyErrors).addError(AccountChange)
      .annotate(OpenApi.Override, jsonBody(CreditsRequest))
  )
  .add(
    HttpApiEndpoint.post("setKeyLimits", "/admin/v1/keys/:key_id/limits").setPath(keyPath)
      .addSuccess(KeyLimits)
      .addError(BodyErrors).addError(errors(KeyNotFound, InvalidAccountRequest))
      .annotate(OpenApi.Override, jsonBody(KeyLimitsRequest))
  )
  .add(
    HttpApiEndpoint.post("setLowBalance", "/admin/v1/accounts/:id/low-balance").setPath(accountPath)
      .addSuccess(LowBalance)
      .addError(BodyErrors).addError(AccountChange)
      .annotate(OpenApi.Override, jsonBody(LowBalanceRequest))
  )
  .add(
    HttpApiEndpoint.get("listLedger", "/admin/v1/accounts/:id/ledger").setPath(accountPath)
      .addSuccess(LedgerPage)
      .addError(httpFailures(400)).addError(NoAccount)
      .annotate(
        OpenApi.Description,
        "The account's ledger lines, newest first: ?from=&to= (Unix seconds), ?limit= (1 to 1000), ?cursor= (last_id)"
      )
  )
  .middleware(AdminAuth)
  .annotate(OpenApi.Title, "Admin")
  .annotate(OpenApi.Description, "Accounts, keys and credits; bearer ADMIN_TOKEN")
{}
