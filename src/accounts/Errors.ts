import { Schema } from "effect"
import { failure } from "../platform/Failure.ts"

/** Errors of keys, authentication, rate limits and account administration (docs/api.md: Keys, Rate limits). */

const withDefault = (message: string) =>
  Schema.String.pipe(Schema.propertySignature, Schema.withConstructorDefault(() => message))

/** Missing, malformed, unknown or disabled key. */
export class InvalidApiKey extends Schema.TaggedError<InvalidApiKey>()("InvalidApiKey", {
  ...failure(401, "invalid_api_key"),
  message: withDefault("Missing, malformed, unknown or disabled API key.")
}) {}

/** A valid key of the wrong kind for the endpoint. */
export class PermissionDenied extends Schema.TaggedError<PermissionDenied>()("PermissionDenied", {
  ...failure(403, "permission_denied"),
  message: Schema.String
}) {}

/** The key's bucket for this endpoint class is empty; `retryAfter` is when one token is back. */
export class RateLimited extends Schema.TaggedError<RateLimited>()("RateLimited", {
  ...failure(429, "rate_limit_exceeded"),
  message: Schema.String,
  retryAfter: Schema.Number
}) {
  static after(seconds: number) {
    return new RateLimited({ message: `Too many requests; retry after ${seconds} s.`, retryAfter: seconds })
  }
}

export class AccountNotFound extends Schema.TaggedError<AccountNotFound>()("AccountNotFound", {
  ...failure(404, "account_not_found"),
  message: Schema.String
}) {
  static of(id: string) {
    return new AccountNotFound({ message: `No account with id "${id}".` })
  }
}

export class KeyNotFound extends Schema.TaggedError<KeyNotFound>()("KeyNotFound", {
  ...failure(404, "key_not_found"),
  message: Schema.String
}) {}

/** An operator's request that cannot be carried out as sent. */
export class InvalidAccountRequest extends Schema.TaggedError<InvalidAccountRequest>()("InvalidAccountRequest", {
  ...failure(400),
  code: Schema.Literal("invalid_request"),
  message: Schema.String
}) {}
