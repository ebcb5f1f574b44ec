import { HttpApiSchema } from "@effect/platform"
import { Schema } from "effect"
import { UploadKind } from "../media/MediaTypes.ts"

/**
 * Media uploads (spec: Media upload session, Confirmed upload, Image
 * pre-upload list): the wire shapes. The lifetimes an operator sets in
 * `config/limits.json` (`uploads`) are in `src/platform/Settings.ts`; the
 * MIME types the service can inspect in `src/media/MediaTypes.ts`.
 */

export const MediaUploadFile = Schema.Struct({
  client_id: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(191)),
  kind: UploadKind,
  filename: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(255)),
  mime_type: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(255)),
  size_bytes: Schema.Int.pipe(Schema.positive())
})
export type MediaUploadFile = typeof MediaUploadFile.Type

export const MAX_UPLOADS_PER_CALL = 12

export const MediaUploadRequest = Schema.Struct({
  files: Schema.Array(MediaUploadFile).pipe(Schema.minItems(1), Schema.maxItems(MAX_UPLOADS_PER_CALL))
})

export const MediaUploadSession = Schema.Struct({
  id: Schema.String,
  client_id: Schema.String,
  kind: UploadKind,
  method: Schema.Literal("PUT"),
  upload_url: Schema.String,
  headers: Schema.Record({ key: Schema.String, value: Schema.String }),
  expires_at: Schema.Int
})
export type MediaUploadSession = typeof MediaUploadSession.Type

export const MediaUploadSessionList = Schema.Struct({
  object: Schema.Literal("media.upload.session.list"),
  data: Schema.Array(MediaUploadSession)
})

export const CompleteUploadsRequest = Schema.Struct({
  upload_ids: Schema.Array(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(128))).pipe(
    Schema.minItems(1),
    Schema.maxItems(MAX_UPLOADS_PER_CALL)
  )
})

export const ConfirmedUpload = Schema.Struct({
  id: Schema.String,
  client_id: Schema.String,
  kind: UploadKind,
  url: Schema.String,
  mime_type: Schema.String,
  size_bytes: Schema.Int,
  temporary: Schema.Literal(true),
  expires_at: Schema.Int
})
export type ConfirmedUpload = typeof ConfirmedUpload.Type

/** Every upload of a `/complete` call, confirmed, in request order (a call confirms all or none). */
export const MediaUploadList = Schema.Struct({
  object: Schema.Literal("media.upload.list"),
  data: Schema.Array(ConfirmedUpload)
})

export const ImageUploadList = Schema.Struct({
  object: Schema.Literal("image.upload.list"),
  data: Schema.Array(Schema.Unknown),
  images: Schema.Array(Schema.String),
  mask: Schema.optional(Schema.String)
})
export type ImageUploadList = typeof ImageUploadList.Type

/** `POST /v1/image/uploads/base64`, for the OpenAPI document; items are checked one by one by the handler. */
export const ImageUploadBase64Request = Schema.Struct({
  images: Schema.Array(Schema.Union(
    Schema.String.annotations({ description: "Base64 or a data URL" }),
    Schema.Struct({
      b64_json: Schema.optional(Schema.String),
      base64: Schema.optional(Schema.String),
      data: Schema.optional(Schema.String),
      field: Schema.optional(Schema.Literal("image", "mask"))
    }).annotations({ description: "Exactly one of b64_json, base64, data; field image (default) or mask" })
  ))
})

/** `POST /v1/image/uploads`: repeatable `image` files and an optional `mask` file, sent as `FormData`. */
export const ImageUploadForm = HttpApiSchema.Multipart(Schema.Struct({}))
