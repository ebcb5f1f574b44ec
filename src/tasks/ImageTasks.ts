import { Effect } from "effect"
import type { ImageSource, ValidImageRequest } from "../catalog/contract/Requests.ts"
import { validateImageRequest } from "../catalog/ImageRequest.ts"
import { Registry } from "../catalog/Registry.ts"
import { inspectable } from "../media/MediaTypes.ts"
import { AppConfig } from "../platform/AppConfig.ts"
import { sha256Hex } from "../platform/Digest.ts"
import type { FormFile } from "../platform/http/Multipart.ts"
import { checkTargetUrl } from "../platform/TargetUrl.ts"
import { ObjectStorage, type StorageError } from "../storage/ObjectStorage.ts"
import { checkImageBytes, imageInputBounds } from "../uploads/ImageBytes.ts"
import { InvalidTaskRequest } from "./Errors.ts"

/**
 * An image task request as either form delivers it, ready for the one
 * creation path that every image endpoint shares (`POST /v1/image/tasks`
 * and the synchronous `/v1/images/*`).
 */
export interface ImageSubmission {
  /** The request in the JSON form's shape, which the plugin-derived validator reads. */
  readonly body: unknown
  /** Files of a multipart request; they take the place of `input.images` / `input.mask`. */
  readonly files?: { readonly images: ReadonlyArray<ImageSource>; readonly mask: ImageSource | null } | undefined
  /** What the Idempotency-Key's digest covers. */
  readonly content: unknown
  /** Writes the multipart files to storage; run after validation, so a refused request stores nothing. */
  readonly store: Effect.Effect<void, StorageError>
}

const storedFile = (accountId: string, file: FormFile, maxBytes: number) =>
  Effect.gen(function*() {
    const where = `${file.field}[${file.index}]`
    if (file.bytes.byteLength > maxBytes) {
      return yield* new InvalidTaskRequest({
        code: "invalid_image_parameter",
        message: `${where} is over ${maxBytes} bytes.`
      })
    }
    const { mimeType } = yield* checkImageBytes(where, file.bytes)
    const digest = yield* Effect.promise(() => sha256Hex(file.bytes))
    // Content-addressed, so a replayed request stores nothing new.
    const storageKey = `inputs/${accountId}/${digest}.${inspectable(mimeType)!.extension}`
    return { storageKey, mimeType, digest, bytes: file.bytes }
  })

/**
 * A multipart edit: the image and mask files checked (size per the model's
 * table, real type by the bytes) and turned into sources; `body` is the
 * request in the JSON form's shape without images.
 */
export const formSubmission = (
  accountId: string,
  body: { readonly model?: unknown },
  images: ReadonlyArray<FormFile>,
  mask: FormFile | null
) =>
  Effect.gen(function*() {
    const registry = yield* Registry
    const storage = yield* ObjectStorage
    const model = registry.image(registry.resolve(typeof body.model === "string" ? body.model : ""))
    const maxBytes = model?.capability.input_images.max_bytes ?? (yield* imageInputBounds).maxBytes
    const stored = yield* Effect.forEach(images, (f) => storedFile(accountId, f, maxBytes))
    const storedMask = mask === null ? null : yield* storedFile(accountId, mask, maxBytes)
    const source = (f: { storageKey: string; mimeType: string }): ImageSource => ({
      storageKey: f.storageKey,
      mimeType: f.mimeType
    })
    const files = { images: stored.map(source), mask: storedMask === null ? null : source(storedMask) }
    // What the digest covers: the fields and the bytes of every file, not where they were stored.
    const content = { ...body, files: { images: stored.map((i) => i.digest), mask: storedMask?.digest ?? null } }
    const store = Effect.forEach([...stored, ...(storedMask ? [storedMask] : [])], (f) =>
      storage.put(f.storageKey, f.bytes, f.mimeType), {
      discard: true
    })
    return { body, files, content, store } satisfies ImageSubmission
  })

/**
 * The submission checked against the model's capability table (the
 * plugin-derived validator), and its input URLs against the outbound rule.
 */
export const validateSubmission = (submission: ImageSubmission) =>
  Effect.gen(function*() {
    const registry = yield* Registry
    const { allowPrivateTargets } = yield* AppConfig
    const valid = yield* validateImageRequest(
      (id) => registry.image(id),
      submission.files === undefined ? { body: submission.body } : { body: submission.body, files: submission.files }
    )
    yield* checkInputUrls(valid, allowPrivateTargets)
    return valid
  })

/**
 * The caller's input URLs, held at creation to the rule for outbound URLs
 * (before the Idempotency-Key and the charge), like video references; the
 * engine checks them again when it fetches them.
 */
const checkInputUrls = (request: ValidImageRequest, allowPrivate: boolean) =>
  Effect.forEach(
    [
      ...request.images.map((source, i) => [`input.images[${i}].url`, source] as const),
      ["input.mask.url", request.mask] as const
    ],
    ([where, source]) =>
      source !== null && "url" in source
        ? checkTargetUrl(source.url, allowPrivate).pipe(
          Effect.asVoid,
          Effect.mapError((e) => new InvalidTaskRequest({ code: e.code, message: `${where}: ${e.message}` }))
        )
        : Effect.void,
    { discard: true }
  )
