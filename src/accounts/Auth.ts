import { HttpServerRequest } from "@effect/platform"
import { Effect, Layer, Option } from "effect"
import { Secrets } from "../platform/Secrets.ts"
import type { RateClass } from "../platform/Settings.ts"
import type { Principal } from "./Account.ts"
import { Accounts } from "./Accounts.ts"
import { InvalidApiKey, PermissionDenied } from "./Errors.ts"
import { RateLimit } from "./RateLimit.ts"
import { AdminAuth, AnyKeyAuth, ModelKeyAuth, ResourceKeyAuth } from "./Security.ts"

const BEARER = /^Bearer[ \t]+(\S+)[ \t]*$/i

/** The bearer token of the request. HttpApi's own decoder does not check the scheme, so it is read here. */
const bearerToken = Effect.map(
  HttpServerRequest.HttpServerRequest,
  (request) => Option.fromNullable(BEARER.exec(request.headers.authorization ?? "")?.[1])
)

const KIND_NAMES = {
  model: "a model API token (sk-…)",
  resource: "a resource API key (ak_…)",
  webhook: "a webhook key (wk-…), which grants no API access,"
} as const

const rateClassOf = (request: HttpServerRequest.HttpServerRequest, kind: Principal["kind"]): RateClass =>
  kind === "model" ? "create" : request.url.includes("/uploads") ? "upload" : "read"

/**
 * 401 `invalid_api_key` for a missing, malformed, unknown or disabled key;
 * 403 `permission_denied` for a valid key of the wrong kind (DESIGN.md); then
 * the key's rate limit for the endpoint class.
 */
const authenticate = (expected: Principal["kind"] | "any") =>
  Effect.gen(function*() {
    const accounts = yield* Accounts
    const rateLimit = yield* RateLimit
    return Effect.gen(function*() {
      const token = yield* bearerToken
      if (Option.isNone(token)) {
        return yield* new InvalidApiKey({
          message: "Missing or malformed Authorization header; send Authorization: Bearer <key>."
        })
      }
      const principal = yield* accounts.authenticate(token.value)
      if (Option.isNone(principal)) return yield* new InvalidApiKey()
      const { kind, ...rest } = principal.value
      if (kind === "webhook" || (expected !== "any" && kind !== expected)) {
        return yield* new PermissionDenied({
          message: `This endpoint needs ${expected === "any" ? "an API key" : KIND_NAMES[expected]}; ${
            KIND_NAMES[kind]
          } was sent.`
        })
      }
      const request = yield* HttpServerRequest.HttpServerRequest
      yield* rateLimit.take(rest.keyId, rateClassOf(request, kind))
      yield* Effect.annotateCurrentSpan({ "account.id": rest.accountId, "api_key.id": rest.keyId })
      return { ...rest, kind } satisfies Principal
    })
  })

export const ModelKeyAuthLive = Layer.effect(
  ModelKeyAuth,
  Effect.map(authenticate("model"), (check) => ModelKeyAuth.of({ bearer: () => check }))
)

export const ResourceKeyAuthLive = Layer.effect(
  ResourceKeyAuth,
  Effect.map(authenticate("resource"), (check) => ResourceKeyAuth.of({ bearer: () => check }))
)

export const AdminAuthLive = Layer.effect(
  AdminAuth,
  Effect.map(Secrets, (secrets) =>
    AdminAuth.of({
      bearer: () =>
        Effect.flatMap(bearerToken, (token) =>
          Option.isSome(token) && secrets.checkAdminToken(token.value)
            ? Effect.void
            : Effect.fail(
              new InvalidApiKey({ message: "Missing or wrong admin token; send Authorization: Bearer <ADMIN_TOKEN>." })
            ))
    }))
)

export const AnyKeyAuthLive = Layer.effect(
  AnyKeyAuth,
  Effect.map(authenticate("any"), (check) => AnyKeyAuth.of({ bearer: () => check }))
)
