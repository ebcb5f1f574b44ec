import { HttpApiSchema } from "@effect/platform"
import { Effect, FiberRef, ParseResult, Schema } from "effect"
import { CurrentRequestId } from "./RequestId.ts"

/** The `error.type` values of the spec and DESIGN.md. */
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
 * Every client-visible failure. `status` picks the HTTP status; `type`, `code`
 * and `message` become the spec's error body; `headers` carries extras such as
 * `Retry-After`.
 */
export class ApiError extends Schema.TaggedError<ApiError>()("ApiError", {
  status: Schema.Number,
  type: ErrorType,
  code: Schema.String,
  message: Schema.String,
  headers: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.String }))
}) {}

const make = (status: number, type: ErrorType) => (code: string, message: string) =>
  new ApiError({ status, type, code, message })

export const badRequest = make(400, "invalid_request_error")
export const unauthorized = (message = "Missing, malformed, unknown or disabled API key.") =>
  make(401, "authentication_error")("invalid_api_key", message)
export const forbidden = (message: string) => make(403, "permission_error")("permission_denied", message)
export const notFound = make(404, "not_found_error")
export const conflict = make(409, "conflict_error")
export const paymentRequired = make(402, "billing_error")
export const internalError = (message = "The server failed to process the request.") =>
  make(500, "api_error")("internal_error", message)
export const rateLimited = (retryAfterSeconds: number) =>
  new ApiError({
    status: 429,
    type: "rate_limit_error",
    code: "rate_limit_exceeded",
    message: `Too many requests; retry after ${retryAfterSeconds} s.`,
    headers: { "retry-after": String(retryAfterSeconds) }
  })
export const payloadTooLarge = (limitBytes: number) =>
  make(413, "invalid_request_error")(
    "request_too_large",
    `The request body exceeds the limit of ${limitBytes} bytes.`
  )

/** The HTTP error body of the spec. */
export const ErrorBody = Schema.Struct({
  error: Schema.Struct({
    type: ErrorType,
    code: Schema.String,
    message: Schema.String,
    request_id: Schema.String
  })
})
export type ErrorBody = typeof ErrorBody.Type

export const errorBody = (error: ApiError, requestId: string): ErrorBody => ({
  error: { type: error.type, code: error.code, message: error.message, request_id: requestId }
})

/**
 * HttpApi derives the status of an error from its schema, so each status gets
 * its own schema over the same class. Encoding reads the request id from the
 * fiber that serves the request.
 */
const wireSchema = (status: number) =>
  Schema.transformOrFail(
    ErrorBody,
    // Errors with extra headers are left to the outer middleware, which can set them.
    Schema.declare((u): u is ApiError => u instanceof ApiError && u.status === status && u.headers === undefined),
    {
      strict: true,
      decode: ({ error }) =>
        ParseResult.succeed(new ApiError({ status, type: error.type, code: error.code, message: error.message })),
      encode: (e) => Effect.map(FiberRef.get(CurrentRequestId), (requestId) => errorBody(e, requestId))
    }
  ).annotations(HttpApiSchema.annotations({ status }))

export const ApiErrorStatuses = [400, 401, 402, 403, 404, 405, 409, 413, 415, 429, 500, 502, 503] as const

export const ApiErrorWire = Schema.Union(...ApiErrorStatuses.map(wireSchema))
