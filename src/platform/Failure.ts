import { Schema } from "effect"

/**
 * The shape every client-visible failure shares. Each feature owns its
 * errors (its `Errors.ts`, `Schema.TaggedError`s); this module only gives
 * them the fields the spec's error body is made of, so a feature never
 * imports HTTP. `platform/http` turns any value of this shape into the body.
 */

/** The `error.type` values of the API's error body (docs/api.md, Errors). */
export const ErrorType = Schema.Literal(
  "invalid_request_error",
  "authentication_error",
  "permission_error",
  "not_found_error",
  "conflict_error",
  "billing_error",
  "rate_limit_error",
  "api_error"
)
export type ErrorType = typeof ErrorType.Type

/**
 * `error.type` follows the status (docs/api.md, Errors): every 4xx not named here is a request error, every 5xx
 * `api_error`.
 */
export const errorTypeOf = (status: number): ErrorType => {
  switch (status) {
    case 401:
      return "authentication_error"
    case 402:
      return "billing_error"
    case 403:
      return "permission_error"
    case 404:
      return "not_found_error"
    case 409:
      return "conflict_error"
    case 429:
      return "rate_limit_error"
    default:
      return status >= 500 ? "api_error" : "invalid_request_error"
  }
}

/**
 * The schema of a field `fixed` makes: the literal `A`, with a constructor
 * default. Named (rather than `ReturnType<typeof fixed<A>>`) so the typed
 * client's declaration files can spell it in other modules: tsc 5.9 overflows
 * its stack printing that instantiation expression outside this file.
 */
export type Fixed<A extends string | number> = Schema.PropertySignature<":", A, never, ":", A, true, never>

/** A field every instance has with the same value, filled in by the constructor. */
const fixed = <const A extends string | number>(value: A): Fixed<A> =>
  Schema.Literal(value).pipe(Schema.propertySignature, Schema.withConstructorDefault(() => value))

/**
 * The fields of a failure answered with `status`: `status` and `type` are
 * fixed by the class; `code` is fixed when one code is given, otherwise the
 * class declares its own `code` (a literal union). Spread into the fields of
 * a `Schema.TaggedError`, with `message`.
 */
export function failure<const S extends number>(status: S): {
  readonly status: Fixed<S>
  readonly type: Fixed<ErrorType>
}
export function failure<const S extends number, const C extends string>(status: S, code: C): {
  readonly status: Fixed<S>
  readonly type: Fixed<ErrorType>
  readonly code: Fixed<C>
}
export function failure(status: number, code?: string) {
  const base = { status: fixed(status), type: fixed(errorTypeOf(status)) }
  return code === undefined ? base : { ...base, code: fixed(code) }
}

/** What the error body and the answer's headers are made of; any feature error has it. */
export const Failure = Schema.Struct({
  _tag: Schema.String,
  status: Schema.Number,
  type: ErrorType,
  code: Schema.String,
  message: Schema.String,
  /** Seconds the caller should wait before trying again (`Retry-After`). */
  retryAfter: Schema.optional(Schema.Number)
})
export type Failure = typeof Failure.Type

export const isFailure = Schema.is(Failure)

/**
 * The server failed; the caller learns nothing more. Raised after the cause
 * was logged, by any feature.
 */
export class InternalError extends Schema.TaggedError<InternalError>()("InternalError", {
  ...failure(500, "internal_error"),
  message: Schema.String.pipe(
    Schema.propertySignature,
    Schema.withConstructorDefault(() => "The server failed to process the request.")
  )
}) {}

/**
 * The database rolled the request's transaction back for a conflict with
 * others running at the same moment (a deadlock or a serialization failure)
 * more often than it is run again (`retryingConflicts`): nothing was done, and
 * the same request is expected to succeed when sent again.
 */
export class ServiceBusy extends Schema.TaggedError<ServiceBusy>()("ServiceBusy", {
  ...failure(503, "service_busy"),
  message: Schema.String.pipe(
    Schema.propertySignature,
    Schema.withConstructorDefault(() => "The service is busy and did nothing; send the request again.")
  ),
  retryAfter: Schema.Number.pipe(Schema.propertySignature, Schema.withConstructorDefault(() => 1))
}) {}
