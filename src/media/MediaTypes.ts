import { Schema } from "effect"

/**
 * The MIME types the service can inspect, the kind each is and the extension
 * it is stored under, and the other spellings clients send for them. Which
 * types and sizes a kind accepts comes from the plugins' tables
 * (`src/catalog/ReferenceRules.ts`), never from here.
 */

export const UploadKind = Schema.Literal("image", "video", "audio")
export type UploadKind = typeof UploadKind.Type

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
