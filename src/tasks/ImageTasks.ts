import { HttpServerRequest } from "@effect/platform"
import { Effect, Schema } from "effect"
import { CurrentPrincipal } from "../accounts/Security.ts"
import { chargeMicros, groupMultiplier } from "../billing/Pricing.ts"
import type { ImageSource, ValidImageRequest } from "../catalog/contract/Requests.ts"
import { validateImageRequest } from "../catalog/ImageRequest.ts"
import { Registry } from "../catalog/Registry.ts"
import { inspectable } from "../media/MediaTypes.ts"
import { AppConfig } from "../platform/AppConfig.ts"
import { canonicalJson, Sha256, sha256Hex } from "../platform/Digest.ts"
import { readJson } from "../platform/http/Body.ts"
import { type FormFile, readForm } from "../platform/http/Multipart.ts"
import { checkTargetUrl } from "../platform/TargetUrl.ts"
import { storageFailureForCaller } from "../storage/CallerFailure.ts"
import { ObjectStorage, type StorageError } from "../storage/ObjectStorage.ts"
import { checkImageBytes, imageFormLimits, imageInputBounds } from "../uploads/ImageBytes.ts"
import { InvalidTaskRequest } from "./Errors.ts"
import type { ImageTask } from "./Task.ts"
import { accepted, currentTraceparent, idempotencyKey } from "./TaskCreation.ts"
import { TaskStore } from "./TaskStore.ts"

/** The form fields of the multipart edit, mapped to the JSON form they stand for. */
const FORM_FIELDS = new Set(["model", "operation", "prompt", "size", "quality", "output_format"])
const FORM_FILES = new Set(["image", "mask"])

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
    const model = registry.image(typeof body.model === "string" ? body.model : "")
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

/** The multipart form of `POST /v1/image/tasks` (edit only), fields turned into the JSON shape the validator reads. */
const fromForm = (accountId: string) =>
  Effect.gen(function*() {
    // Bounds before the model is known; the model's own limits are checked after.
    const form = yield* readForm(yield* imageFormLimits)
    for (const name of form.fields.keys()) {
      if (!FORM_FIELDS.has(name)) {
        return yield* new InvalidTaskRequest({ code: "invalid_request", message: `Unknown form field "${name}".` })
      }
    }
    for (const file of form.files) {
      if (!FORM_FILES.has(file.field)) {
        return yield* new InvalidTaskRequest({
          code: "invalid_request",
          message: `Unknown file field "${file.field}".`
        })
      }
    }
    if (form.fields.get("operation") !== "edit") {
      return yield* new InvalidTaskRequest({
        code: "invalid_request",
        message: `The multipart form is only for "operation" = "edit".`
      })
    }
    const masks = form.files.filter((f) => f.field === "mask")
    if (masks.length > 1) {
      return yield* new InvalidTaskRequest({ code: "invalid_request", message: `At most one "mask" file is accepted.` })
    }
    const output = Object.fromEntries(
      [["size", "size"], ["quality", "quality"], ["output_format", "format"]]
        .flatMap(([field, key]) => (form.fields.has(field!) ? [[key, form.fields.get(field!)]] : []))
    )
    const body = {
      ...(form.fields.has("model") ? { model: form.fields.get("model") } : {}),
      operation: "edit",
      input: { ...(form.fields.has("prompt") ? { prompt: form.fields.get("prompt") } : {}) },
      ...(Object.keys(output).length ? { output } : {})
    }
    return yield* formSubmission(accountId, body, form.files.filter((f) => f.field === "image"), masks[0] ?? null)
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
 * Creates and pre-charges (price per image × count × group multiplier) a
 * validated image task with the Idempotency-Key semantics of video tasks:
 * the same key and content answer the original task (`replayed`), other
 * content 409.
 */
export const createImageTask = (submission: ImageSubmission, valid: ValidImageRequest) =>
  Effect.gen(function*() {
    const principal = yield* CurrentPrincipal
    const registry = yield* Registry
    const taskStore = yield* TaskStore
    const { groups } = yield* AppConfig
    const key = yield* idempotencyKey
    const served = registry.image(valid.model)!
    yield* submission.store.pipe(
      Effect.catchTag("StorageError", storageFailureForCaller("storing image inputs failed"))
    )
    const { task, replayed } = yield* taskStore.create({
      accountId: principal.accountId,
      kind: "image",
      model: valid.model,
      operation: valid.operation,
      request: valid,
      clientReferenceId: valid.clientReferenceId,
      metadata: valid.metadata,
      idempotencyKey: key,
      digest: yield* Effect.flatMap(Sha256, (sha) => sha.hex(canonicalJson(submission.content))),
      chargeMicros: chargeMicros(served.price, valid.count, groupMultiplier(groups, principal.group)),
      subscriptionAllowed: served.settings.subscription,
      channel: served.routes[0]!.channel,
      traceparent: yield* currentTraceparent
    })
    yield* Effect.annotateCurrentSpan({ "task.id": task.id, "task.model": task.model, "task.replayed": replayed })
    return { task: task as ImageTask, replayed }
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

/**
 * `POST /v1/image/tasks` in either form: JSON, or multipart for `edit` with
 * the image files in the request. Answers 202 with the queued task.
 */
export const createImage = Effect.gen(function*() {
  const principal = yield* CurrentPrincipal
  const { limits } = yield* AppConfig
  const request = yield* HttpServerRequest.HttpServerRequest
  const multipart = /^multipart\//i.test(request.headers["content-type"] ?? "")
  const submission: ImageSubmission = multipart
    ? yield* fromForm(principal.accountId)
    : yield* Effect.map(readJson(Schema.Unknown), (body) => ({ body, content: body, store: Effect.void }))
  const valid = yield* validateSubmission(submission)
  const { task, replayed } = yield* createImageTask(submission, valid)
  return accepted("image", task, replayed, limits.poll_interval_s)
})
