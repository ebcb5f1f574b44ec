import { Schema } from "effect"
import { ErrorType, type Failure } from "../Failure.ts"

/**
 * A failure of the HTTP layer itself (routing, reading a body, a range
 * request), or a feature's failure that a handler answers with extra
 * headers. Features never raise it: they raise their own errors.
 */
export class HttpFailure extends Schema.TaggedError<HttpFailure>()("HttpFailure", {
  status: Schema.Number,
  type: ErrorType,
  code: Schema.String,
  message: Schema.String,
  retryAfter: Schema.optional(Schema.Number),
  headers: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.String }))
}) {}

const make = (status: number, type: ErrorType) => (code: string, message: string) =>
  new HttpFailure({ status, type, code, message })

export const badRequest = make(400, "invalid_request_error")
export const notFound = make(404, "not_found_error")
export const payloadTooLarge = (limitBytes: number) =>
  make(413, "invalid_request_error")("request_too_large", `The request body exceeds the limit of ${limitBytes} bytes.`)
export const unsupportedMediaType = (message: string) =>
  make(415, "invalid_request_error")("unsupported_media_type", message)

/**
 * A feature's failure as its handler answers it: with extra headers only the
 * handler knows (e.g. `Idempotent-Replayed`), or reworded for the endpoint
 * (the OpenAI-shaped image endpoints name their own parameters).
 */
export const asHttpFailure = (
  failure: Failure,
  { headers = {}, message = failure.message }: { readonly headers?: Record<string, string>; readonly message?: string }
): HttpFailure =>
  new HttpFailure({
    status: failure.status,
    type: failure.type,
    code: failure.code,
    message,
    ...(failure.retryAfter === undefined ? {} : { retryAfter: failure.retryAfter }),
    ...(Object.keys(headers).length > 0 ? { headers } : {})
  })
