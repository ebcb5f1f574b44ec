import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { BodyErrors, errors, ResourceId } from "../platform/http/ErrorContract.ts"
import { jsonBody } from "../platform/http/OpenApiBody.ts"
import {
  Account,
  AccountDetail,
  Balances,
  CreateAccountRequest,
  CreateKeyRequest,
  CreditsRequest,
  IssuedKey
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
  .middleware(AdminAuth)
  .annotate(OpenApi.Title, "Admin")
  .annotate(OpenApi.Description, "Accounts, keys and credits; bearer ADMIN_TOKEN")
{}
