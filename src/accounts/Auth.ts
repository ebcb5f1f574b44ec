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

/** The bearer token of an `Authorization` header. HttpApi's own decoder does not check the scheme, so it is read here. */
export const tokenOf = (authorization: string | undefined) => BEARER.exec(authorization ?? "")?.[1]

/** The bearer token of the request. */
const bearerToken = Effect.map(
  HttpServerRequest.HttpServerRequest,
  (request) => Option.fromNullable(tokenOf(request.headers.authorization))
)

const KIND_NAMES = {
  model: "a model API token (sk-…)",
  resource: "a resource API key (ak_…)",
  webhook: "a webhook key (wk-…), which grants no API access,"
} as const

const rateClassOf = (url: string, kind: Principal["kind"]): RateClass =>
  kind === "model" ? "create" : url.includes("/uploads") ? "upload" : "read"

/** The key kind an endpoint takes; `any` is either API key kind. */
export type ExpectedKey = Principal["kind"] | "any"

/**
 * 401 `invalid_api_key` for a missing, malformed, unknown or disabled key; 403
 * `permission_denied` for a valid key of the wrong kind (docs/api.md, Keys);
 * then the key's rate limit for the endpoint class. From the request's
 * `Authorization` header and URL, so the fast routes (FastRoutes.ts) check a
 * key exactly as the contract's middleware does.
 */
export const makeKeyCheck = Effect.gen(function*() {
  const accounts = yield* Accounts
  const rateLimit = yield* RateLimit
  return (expected: ExpectedKey, authorization: string | undefined, url: string) =>
    Effect.gen(function*() {
      const token = tokenOf(authorization)
      if (token === undefined) {
        return yield* new InvalidApiKey({
          message: "Missing or malformed Authorization header; send Authorization: Bearer <key>."
        })
      }
      const principal = yield* accounts.authenticate(token)
      if (Option.isNone(principal)) return yield* new InvalidApiKey()
      const { kind, ...rest } = principal.value
      if (kind === "webhook" || (expected !== "any" && kind !== expected)) {
        return yield* new PermissionDenied({
          message: `This endpoint needs ${expected === "any" ? "an API key" : KIND_NAMES[expected]}; ${
            KIND_NAMES[kind]
          } was sent.`
        })
      }
      yield* rateLimit.take(rest.keyId, rateClassOf(url, kind))
      yield* Effect.annotateCurrentSpan({ "account.id": rest.accountId, "api_key.id": rest.keyId })
      return { ...rest, kind } satisfies Principal
    })
})

/**
 * `makeKeyCheck`'s check done at once, for the fast routes' common request:
 * the principal of a well-formed key of the expected kind that this
 * replica's key cache holds, with a token of its rate taken. Undefined, with
 * nothing taken, for any other request (a missing or unknown key, a key not
 * cached, the wrong kind, a rate spent), which the full check then decides
 * and answers. The caller annotates its span with the account and key, as the
 * full check does.
 */
export const makeQuickKeyCheck = Effect.gen(function*() {
  const accounts = yield* Accounts
  const rateLimit = yield* RateLimit
  return (expected: Principal["kind"], authorization: string | undefined, url: string, nowMs: number) => {
    const token = tokenOf(authorization)
    if (token === undefined) return undefined
    const principal = accounts.cachedCredential(token, nowMs)
    if (principal === undefined || principal.kind !== expected) return undefined
    const { kind, ...rest } = principal
    if (rateLimit.takeAt(rest.keyId, rateClassOf(url, kind), nowMs) !== 0) return undefined
    return { ...rest, kind } satisfies Principal
  }
})

const authenticate = (expected: ExpectedKey) =>
  Effect.map(makeKeyCheck, (check) =>
    Effect.flatMap(
      HttpServerRequest.HttpServerRequest,
      (request) => check(expected, request.headers.authorization, request.url)
    ))

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
