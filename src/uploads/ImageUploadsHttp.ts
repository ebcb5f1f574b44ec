import { Effect, Either, Encoding, Schema } from "effect"
import { CurrentPrincipal } from "../accounts/Security.ts"
import { AppConfig } from "../platform/AppConfig.ts"
import { readJson } from "../platform/http/Body.ts"
import { readForm } from "../platform/http/Multipart.ts"
import { storageFailureForCaller } from "../storage/CallerFailure.ts"
import { InvalidUpload, UploadTooLarge } from "./Errors.ts"
import { checkImageBytes, imageInputBounds } from "./ImageBytes.ts"
import type { ImageUploadList } from "./Upload.ts"
import { Uploads } from "./Uploads.ts"

/**
 * The image pre-upload (spec: POST /v1/image/uploads and /base64): images
 * and an optional mask are checked from their bytes (PNG, JPEG or WebP, and
 * decodable), stored, and answered with temporary URLs for
 * `input.images[].url` and `input.mask.url`.
 */

const CONTENT_KEYS = ["b64_json", "base64", "data"] as const
const ITEM_KEYS = new Set<string>([...CONTENT_KEYS, "field"])
/** Room for a data URL's prefix around the base64 of one file. */
const ITEM_OVERHEAD = 256
const BODY_OVERHEAD = 64 * 1024

interface Upload {
  /** How the item is named in errors: `image[1]`, `images[3]`. */
  readonly where: string
  readonly field: "image" | "mask"
  readonly bytes: Uint8Array
}

const bad = (message: string) => new InvalidUpload({ message })

const tooLarge = (where: string, maxBytes: number) =>
  new UploadTooLarge({ message: `${where} is larger than ${maxBytes} bytes.` })

const checkCounts = (uploads: ReadonlyArray<Upload>, maxImages: number) => {
  const images = uploads.filter((u) => u.field === "image").length
  const masks = uploads.filter((u) => u.field === "mask").length
  if (images === 0) return Effect.fail(bad("At least one image is required."))
  if (images > maxImages) return Effect.fail(bad(`At most ${maxImages} images are accepted per call; got ${images}.`))
  if (masks > 1) return Effect.fail(bad(`At most one mask is accepted; got ${masks}.`))
  return Effect.void
}

/** Each file must really be an image; then all are stored and signed. */
const storeAll = (uploads: ReadonlyArray<Upload>) =>
  Effect.gen(function*() {
    const principal = yield* CurrentPrincipal
    const store = yield* Uploads
    const found = yield* Effect.forEach(uploads, (upload) =>
      Effect.map(checkImageBytes(upload.where, upload.bytes), ({ mimeType }) => ({ upload, mimeType })), {
      concurrency: 2
    })
    const urls = yield* Effect.forEach(found, ({ mimeType, upload }) =>
      Effect.map(
        store.storeImage(principal.accountId, upload.bytes, mimeType),
        (url) => ({ field: upload.field, url })
      )).pipe(
        Effect.catchTag("StorageError", storageFailureForCaller("storing an image upload failed"))
      )
    const mask = urls.find((u) =>
      u.field === "mask"
    )
    return {
      object: "image.upload.list",
      data: [],
      images: urls.filter((u) => u.field === "image").map((u) => u.url),
      ...(mask ? { mask: mask.url } : {})
    } satisfies ImageUploadList
  })

/** `POST /v1/image/uploads`: multipart with repeatable `image` files and at most one `mask` file. */
export const imageUploadsFromForm = Effect.gen(function*() {
  const { maxBytes, maxImages } = yield* imageInputBounds
  const form = yield* readForm({ maxFileBytes: maxBytes, maxFiles: maxImages + 1 })
  for (const name of form.fields.keys()) {
    return yield* bad(`Unknown form field "${name}"; send files in "image" (repeatable) and "mask".`)
  }
  const uploads: Array<Upload> = []
  for (const file of form.files) {
    if (file.field !== "image" && file.field !== "mask") {
      return yield* bad(`Unknown file field "${file.field}"; send files in "image" (repeatable) and "mask".`)
    }
    const where = `${file.field}[${file.index}]`
    if (file.bytes.byteLength === 0) return yield* bad(`${where} is empty.`)
    uploads.push({ where, field: file.field, bytes: file.bytes })
  }
  yield* checkCounts(uploads, maxImages)
  return yield* storeAll(uploads)
})

const BASE64 = /^[A-Za-z0-9+/_-]*={0,2}$/

/** Plain base64 (standard or URL-safe alphabet, line breaks allowed) or a `data:…;base64,` URL. */
const decodeContent = (where: string, content: string): Either.Either<Uint8Array, InvalidUpload | UploadTooLarge> => {
  let payload = content
  if (/^data:/i.test(content.trimStart())) {
    const match = /^\s*data:([^,]*),(.*)$/s.exec(content)
    if (match === null || !/;base64$/i.test(match[1]!.trim())) {
      return Either.left(bad(`${where} is a data URL without ";base64"; only base64 data URLs are accepted.`))
    }
    payload = match[2]!
  }
  const compact = payload.replace(/\s+/g, "")
  if (compact.length === 0) return Either.left(bad(`${where} is empty.`))
  const unpadded = compact.replace(/=+$/, "")
  if (
    !BASE64.test(compact) || unpadded.length % 4 === 1 ||
    (unpadded.length !== compact.length && compact.length % 4 !== 0)
  ) {
    return Either.left(bad(`${where} is not valid base64.`))
  }
  const standard = unpadded.replace(/-/g, "+").replace(/_/g, "/")
  const padded = standard + "=".repeat((4 - (standard.length % 4)) % 4)
  return Encoding.decodeBase64(padded).pipe(Either.mapLeft(() => bad(`${where} is not valid base64.`)))
}

const readItem = (
  item: unknown,
  i: number,
  maxBytes: number
): Either.Either<Upload, InvalidUpload | UploadTooLarge> => {
  const where = `images[${i}]`
  let content: unknown
  let field: unknown = "image"
  if (typeof item === "string") {
    content = item
  } else if (typeof item === "object" && item !== null && !Array.isArray(item)) {
    const record = item as Record<string, unknown>
    const unknown = Object.keys(record).find((k) => !ITEM_KEYS.has(k))
    if (unknown !== undefined) {
      return Either.left(
        bad(`${where} has an unknown field "${unknown}"; an item holds one of b64_json, base64, data, and field.`)
      )
    }
    const present = CONTENT_KEYS.filter((k) => Object.hasOwn(record, k))
    if (present.length !== 1) {
      return Either.left(bad(
        `${where} must hold exactly one of b64_json, base64, data; it holds ${
          present.length === 0 ? "none" : present.join(" and ")
        }.`
      ))
    }
    content = record[present[0]!]
    if (Object.hasOwn(record, "field")) field = record.field
    if (typeof content !== "string") return Either.left(bad(`${where}.${present[0]} must be a string.`))
  } else {
    return Either.left(
      bad(`${where} must be a base64 string, a data URL, or an object with one of b64_json, base64, data.`)
    )
  }
  if (field !== "image" && field !== "mask") return Either.left(bad(`${where}.field must be "image" or "mask".`))
  return Either.flatMap(
    decodeContent(where, content as string),
    (bytes) =>
      bytes.byteLength > maxBytes ? Either.left(tooLarge(where, maxBytes)) : Either.right({ where, field, bytes })
  )
}

/** `POST /v1/image/uploads/base64`: `{ images: [...] }`, each a string or an object with one content key and `field`. */
export const imageUploadsFromBase64 = Effect.gen(function*() {
  const { maxBytes, maxImages } = yield* imageInputBounds
  const { limits } = yield* AppConfig
  const perItem = Math.ceil(maxBytes / 3) * 4 + ITEM_OVERHEAD
  const body = yield* readJson(
    Schema.Struct({ images: Schema.Array(Schema.Unknown) }),
    Math.min(perItem * (maxImages + 1) + BODY_OVERHEAD, limits.body.upload_bytes)
  )
  if (body.images.length > maxImages + 1) {
    return yield* bad(
      `At most ${maxImages} images and one mask are accepted per call; got ${body.images.length} items.`
    )
  }
  const uploads = yield* Effect.forEach(body.images, (item, i) => readItem(item, i, maxBytes))
  yield* checkCounts(uploads, maxImages)
  return yield* storeAll(uploads)
})
