import { Schema } from "effect"

/**
 * Media uploads (spec: Media upload session, Confirmed upload, Image
 * pre-upload list): the wire shapes, the lifetimes an operator sets in
 * `config/limits.json` (`uploads`), and the MIME types the service can
 * inspect. Which types and sizes a kind accepts comes from the plugins'
 * tables (`src/plugin/ReferenceRules.ts`), never from here.
 */

export const UploadKind = Schema.Literal("image", "video", "audio")
export type UploadKind = typeof UploadKind.Type

const Seconds = (fallback: number) =>
  Schema.optionalWith(Schema.Int.pipe(Schema.between(1, 7 * 24 * 3600)), { default: () => fallback })

/** `limits.json` → `uploads`: URL lifetimes and the bounds of fetching a reference URL. */
export const UploadSettings = Schema.Struct({
  /** Lifetime of a session's pre-signed PUT URL. */
  session_url_ttl_s: Seconds(900),
  /** Lifetime of a confirmed upload's URL (the one placed in `reference_*`). */
  confirmed_url_ttl_s: Seconds(86_400),
  /** Lifetime of an image pre-upload URL (`/v1/image/uploads`). */
  image_url_ttl_s: Seconds(86_400),
  /** Time allowed to fetch one external reference URL, redirects included. */
  fetch_timeout_s: Seconds(60),
  /** Redirects followed when fetching a reference URL; each hop is checked like the first. */
  fetch_max_redirects: Schema.optionalWith(Schema.Int.pipe(Schema.between(0, 10)), { default: () => 3 }),
  /** How often each worker process looks for expired uploads to remove. */
  sweep_interval_s: Seconds(300),
  /** Uploads one sweep claims at a time; a sweep goes on while full batches come back. */
  sweep_batch: Schema.optionalWith(Schema.Int.pipe(Schema.between(1, 10_000)), { default: () => 100 }),
  /**
   * How long after its URL expired an upload is kept: room for a PUT or a
   * task creation that began just before the expiry to finish.
   */
  sweep_grace_s: Schema.optionalWith(Schema.Int.pipe(Schema.between(0, 86_400)), { default: () => 60 })
})
export type UploadSettings = typeof UploadSettings.Type

/** The types the inspector reads, with the kind each is and the extension it is stored under. */
export const INSPECTABLE_TYPES: Readonly<Record<string, { readonly kind: UploadKind; readonly extension: string }>> = {
  "image/png": { kind: "image", extension: "png" },
  "image/jpeg": { kind: "image", extension: "jpg" },
  "image/webp": { kind: "image", extension: "webp" },
  "video/mp4": { kind: "video", extension: "mp4" },
  "video/quicktime": { kind: "video", extension: "mov" },
  "audio/mpeg": { kind: "audio", extension: "mp3" },
  "audio/wav": { kind: "audio", extension: "wav" }
}

export const inspectable = (mimeType: string) =>
  Object.hasOwn(INSPECTABLE_TYPES, mimeType) ? INSPECTABLE_TYPES[mimeType] : undefined

/** Other spellings of the same types that clients and tools send. */
const ALIASES: Readonly<Record<string, string>> = {
  "audio/mp3": "audio/mpeg",
  "audio/x-mp3": "audio/mpeg",
  "audio/mpeg3": "audio/mpeg",
  "audio/x-mpeg": "audio/mpeg",
  "audio/x-wav": "audio/wav",
  "audio/wave": "audio/wav",
  "audio/vnd.wave": "audio/wav",
  "image/jpg": "image/jpeg",
  "image/pjpeg": "image/jpeg"
}

/** `Video/MP4; codecs=…` → `video/mp4`; aliases to their usual name. */
export const normalizeMimeType = (raw: string): string => {
  const base = raw.split(";")[0]!.trim().toLowerCase()
  return Object.hasOwn(ALIASES, base) ? ALIASES[base]! : base
}

// --- Wire shapes -------------------------------------------------------------

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
