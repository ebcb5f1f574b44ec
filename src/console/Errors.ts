import { Schema } from "effect"
import { failure } from "../platform/Failure.ts"

/**
 * Errors of the console's own endpoints: signing in, the session cookie, the
 * checks every write passes, and what only the operator may do. Answered
 * with the spec's error body like every other feature's errors; the page
 * shows `message`.
 */

const withDefault = (message: string) =>
  Schema.String.pipe(Schema.propertySignature, Schema.withConstructorDefault(() => message))

/** No session cookie, or one whose session expired, was closed, or whose key was disabled. */
export class NotSignedIn extends Schema.TaggedError<NotSignedIn>()("NotSignedIn", {
  ...failure(401, "not_signed_in"),
  message: withDefault("Sign in first.")
}) {}

/** Sign-in with a key that is unknown or disabled, and not the admin token either. */
export class InvalidSignInKey extends Schema.TaggedError<InvalidSignInKey>()("InvalidSignInKey", {
  ...failure(401, "invalid_key"),
  message: withDefault(
    "Unknown or disabled key. Sign in with a resource key (ak_…) or, as the operator, the admin token."
  )
}) {}

/** Sign-in with a valid key of another kind: a model token or a webhook key opens no console session. */
export class ResourceKeyNeeded extends Schema.TaggedError<ResourceKeyNeeded>()("ResourceKeyNeeded", {
  ...failure(403, "resource_key_needed"),
  message: withDefault("Sign in with a resource key (ak_…), not a model token or a webhook key.")
}) {}

/** A sign-in or a write whose `Origin` is another site's. */
export class CrossOrigin extends Schema.TaggedError<CrossOrigin>()("CrossOrigin", {
  ...failure(403, "cross_origin"),
  message: withDefault("Writes are accepted from the console's own pages only.")
}) {}

/** A write without the session's CSRF token in `X-CSRF-Token`, or with another one. */
export class CsrfTokenInvalid extends Schema.TaggedError<CsrfTokenInvalid>()("CsrfTokenInvalid", {
  ...failure(403, "csrf_token_invalid"),
  message: withDefault("Missing or wrong CSRF token; reload the page.")
}) {}

/** An account owner's session on an operator's endpoint. */
export class OperatorOnly extends Schema.TaggedError<OperatorOnly>()("OperatorOnly", {
  ...failure(403, "operator_only"),
  message: withDefault("This page is for the operator (sign in with the admin token).")
}) {}

/** An operator's session that has not chosen the account whose pages it shows. */
export class NoAccountSelected extends Schema.TaggedError<NoAccountSelected>()("NoAccountSelected", {
  ...failure(409, "no_account_selected"),
  message: withDefault("Choose an account first.")
}) {}

/** "Send again" on an event that is neither failed nor skipped (or is not the account's). */
export class EventNotResendable extends Schema.TaggedError<EventNotResendable>()("EventNotResendable", {
  ...failure(409, "event_not_resendable"),
  message: withDefault("Only a failed or skipped event can be sent again.")
}) {}
