import { HttpApiMiddleware, HttpApiSecurity } from "@effect/platform"
import { Context } from "effect"
import { errors } from "../platform/http/ErrorContract.ts"
import type { Principal } from "./Account.ts"
import { InvalidApiKey, PermissionDenied, RateLimited } from "./Errors.ts"

/** The account and key a request authenticated with. */
export class CurrentPrincipal extends Context.Tag("CurrentPrincipal")<CurrentPrincipal, Principal>() {}

const bearer = { bearer: HttpApiSecurity.bearer }

/** What checking an API key answers with: no or a bad key, the wrong kind of key, the key's rate limit. */
const KeyErrors = errors(InvalidApiKey, PermissionDenied, RateLimited)

/** `sk-` model tokens: creating tasks. */
export class ModelKeyAuth extends HttpApiMiddleware.Tag<ModelKeyAuth>()("ModelKeyAuth", {
  provides: CurrentPrincipal,
  failure: KeyErrors,
  security: bearer
}) {}

/** `ak_` resource keys: reading tasks, uploads, assets. */
export class ResourceKeyAuth extends HttpApiMiddleware.Tag<ResourceKeyAuth>()("ResourceKeyAuth", {
  provides: CurrentPrincipal,
  failure: KeyErrors,
  security: bearer
}) {}

/** The operator's `ADMIN_TOKEN`. */
export class AdminAuth extends HttpApiMiddleware.Tag<AdminAuth>()("AdminAuth", {
  failure: errors(InvalidApiKey),
  security: bearer
}) {}

/** Either API key kind: listings that both kinds of caller need. */
export class AnyKeyAuth extends HttpApiMiddleware.Tag<AnyKeyAuth>()("AnyKeyAuth", {
  provides: CurrentPrincipal,
  failure: KeyErrors,
  security: bearer
}) {}
