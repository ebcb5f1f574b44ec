import { HttpApiBuilder } from "@effect/platform"
import { Effect, Layer } from "effect"
import { GatewayApi } from "../Api.ts"
import { readJson } from "../platform/http/Body.ts"
import { CreateAccountRequest, CreateKeyRequest, CreditsRequest } from "./Account.ts"
import { Accounts } from "./Accounts.ts"
import { AdminAuthLive } from "./Auth.ts"

export const AdminLive = HttpApiBuilder.group(GatewayApi, "admin", (handlers) =>
  Effect.gen(function*() {
    const accounts = yield* Accounts
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
  })).pipe(Layer.provide(AdminAuthLive))
