import { Schema } from "effect"
import { failure } from "../platform/Failure.ts"

/** Errors of the local object store's pre-signed URLs and of serving stored objects. */

export class ObjectNotFound extends Schema.TaggedError<ObjectNotFound>()("ObjectNotFound", {
  ...failure(404, "object_not_found"),
  message: Schema.String.pipe(
    Schema.propertySignature,
    Schema.withConstructorDefault(() => "No object at this address.")
  )
}) {}

/** The URL's `X-Expires` has passed. */
export class UrlExpired extends Schema.TaggedError<UrlExpired>()("UrlExpired", {
  ...failure(403, "url_expired"),
  message: Schema.String.pipe(
    Schema.propertySignature,
    Schema.withConstructorDefault(() => "This pre-signed URL has expired; ask for a new one.")
  )
}) {}

/** The URL's signature does not cover this request (method, object, type or length). */
export class InvalidSignature extends Schema.TaggedError<InvalidSignature>()("InvalidSignature", {
  ...failure(403, "invalid_signature"),
  message: Schema.String
}) {}

/** An upload through a PUT URL that did not deliver the bytes its Content-Length announced; nothing was stored. */
export class IncompleteBody extends Schema.TaggedError<IncompleteBody>()("IncompleteBody", {
  ...failure(400, "incomplete_body"),
  message: Schema.String
}) {}

/**
 * Object storage is away, full or refusing: nothing the caller sent is at
 * fault, and the same request may succeed later (`Retry-After`).
 */
export class StorageUnavailable extends Schema.TaggedError<StorageUnavailable>()("StorageUnavailable", {
  ...failure(503, "storage_unavailable"),
  message: Schema.String,
  retryAfter: Schema.Number
}) {}
