import { HttpApiBuilder } from "@effect/platform"
import { Effect, Layer } from "effect"
import { GatewayApi } from "../Api.ts"
import { readJson } from "../platform/http/Body.ts"
import { readQuery } from "../platform/http/ListQuery.ts"
import {
  CreateAccountRequest,
  CreateKeyRequest,
  CreditsRequest,
  KeyLimitsRequest,
  LowBalanceRequest
} from "./Account.ts"
import { Accounts } from "./Accounts.ts"
import { LedgerParams } from "./Api.ts"
import { AdminAuthLive } from "./Auth.ts"
import { SpendLimits } from "./SpendLimits.ts"

export const AdminLive = HttpApiBuilder.group(GatewayApi, "admin", (handlers) =>
  Effect.gen(function*() {
    const accounts = yield* Accounts
    const spendLimits = yield* SpendLimits
    return handlers
      .handle("createAccount", () => Effect.flatMap(readJson(CreateAccountRequest), accounts.create))
      .handle("getAccount", ({ path }) => accounts.detail(path.id))
      .handle("createKey", ({ path }) =>
        Effect.flatMap(readJson(CreateKeyRequest), (req) => accounts.issueKey(path.id, req)))
      .handle("disableKey", ({ path }) =>
        accounts.disableKey(path.key_id))
      .handle("addCredits", ({ path }) =>
        Effect.flatMap(readJson(CreditsRequest), (req) =>
          accounts.addCredits(path.id, req)))
      .handle("setKeyLimits", ({ path }) =>
        Effect.flatMap(readJson(KeyLimitsRequest), (req) =>
          spendLimits.setKeyLimits(path.key_id, req)))
      .handle("listLedger", ({ path }) =>
        Effect.flatMap(readQuery(LedgerParams), (q) =>
          accounts.ledger(path.id, q)))
      .handle("setLowBalance", ({ path }) =>
        Effect.flatMap(readJson(LowBalanceRequest), (req) =>
          spendLimits.setLowBalance(path.id, req)))
  })).pipe(Layer.provide(AdminAuthLive))
