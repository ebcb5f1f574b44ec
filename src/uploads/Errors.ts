import { Schema } from "effect"
import { DURATION_UNREADABLE } from "../catalog/Errors.ts"
import { failure, type InternalError } from "../platform/Failure.ts"
import type { StorageUnavailable } from "../storage/Errors.ts"

/** Errors of upload sessions, their confirmation and the image pre-upload (docs/uploads.md). */

/** An unknown id, or another account's. */
export class UploadNotFound extends Schema.TaggedError<UploadNotFound>()("UploadNotFound", {
  ...failure(404, "upload_not_found"),
  message: Schema.String
}) {
  static of(id: string) {
    return new UploadNotFound({ message: `No upload with id "${id}" under this account.` })
  }
}

/** A session whose object was never uploaded. */
export class UploadNotReceived extends Schema.TaggedError<UploadNotReceived>()("UploadNotReceived", {
  ...failure(409, "upload_not_received"),
  message: Schema.String
}) {}

/** Bytes that fail inspection at confirmation; the message names the upload. */
export class InvalidUploadContent extends Schema.TaggedError<InvalidUploadContent>()("InvalidUploadContent", {
  ...failure(400),
  code: Schema.Literal("invalid_upload_content", "upload_size_mismatch", DURATION_UNREADABLE),
  message: Schema.String
}) {}

/** A session request or an image pre-upload that cannot be accepted as sent. */
export class InvalidUpload extends Schema.TaggedError<InvalidUpload>()("InvalidUpload", {
  ...failure(400, "invalid_request"),
  message: Schema.String
}) {}

/** One pre-uploaded image over the image plugin's per-file limit. */
export class UploadTooLarge extends Schema.TaggedError<UploadTooLarge>()("UploadTooLarge", {
  ...failure(413, "request_too_large"),
  message: Schema.String
}) {}

/** Storage, a temporary file or the prober failed: nothing is wrong with the bytes; try again. */
export class InspectionUnavailable extends Schema.TaggedError<InspectionUnavailable>()("InspectionUnavailable", {
  ...failure(503),
  code: Schema.Literal("upload_inspection_failed", "inspection_unavailable"),
  message: Schema.String
}) {}

/** What confirming uploads can answer with. */
export type UploadError =
  | UploadNotFound
  | UploadNotReceived
  | InvalidUploadContent
  | InspectionUnavailable
  | StorageUnavailable
  | InternalError
