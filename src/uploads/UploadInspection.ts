import { FileSystem, Path } from "@effect/platform"
import { Effect, Option, Stream } from "effect"
import { DURATION_UNREADABLE } from "../catalog/Errors.ts"
import { describeType, type Inspection, MediaInspector, SNIFF_BYTES } from "../media/MediaInspector.ts"
import type { UploadKind } from "../media/MediaTypes.ts"
import type { InternalError } from "../platform/Failure.ts"
import { storageFailureForCaller } from "../storage/CallerFailure.ts"
import type { StorageUnavailable } from "../storage/Errors.ts"
import { ObjectStorage } from "../storage/ObjectStorage.ts"
import { InspectionUnavailable, InvalidUploadContent } from "./Errors.ts"

/** What a session declared, which the stored bytes must match. */
export interface DeclaredUpload {
  readonly id: string
  readonly kind: UploadKind
  readonly declared_mime_type: string
  readonly declared_size_bytes: number
}

const KIND_NAMES: Record<UploadKind, string> = { image: "an image", video: "a video", audio: "an audio file" }

/** Storage, a temporary file or the prober failed: nothing is wrong with the upload itself. */
export const inspectionUnavailable = (id: string) =>
  new InspectionUnavailable({
    code: "upload_inspection_failed",
    message: `Upload ${id} could not be inspected right now; try again.`
  })

/**
 * Confirmation's reading of an upload (docs/uploads.md, The three steps): the
 * object at `key`, read into a temporary file (never past the declared size)
 * and inspected. Nothing the client said is trusted: the size is measured, the
 * type sniffed from the bytes, the duration or dimensions found by the parser.
 * Every refusal is the spec's error naming the upload.
 */
export const makeUploadInspection = Effect.gen(function*() {
  const storage = yield* ObjectStorage
  const inspector = yield* MediaInspector
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path

  return (
    upload: DeclaredUpload,
    key: string
  ): Effect.Effect<Inspection, InvalidUploadContent | InspectionUnavailable | StorageUnavailable | InternalError> =>
    Effect.gen(function*() {
      const { declared_size_bytes: declaredSize, id } = upload
      const sizeMismatch = (found: string) =>
        new InvalidUploadContent({
          code: "upload_size_mismatch",
          message: `Upload ${id} holds ${found} bytes, not the declared ${declaredSize}.`
        })
      const invalidContent = (message: string) =>
        new InvalidUploadContent({ code: "invalid_upload_content", message: `Upload ${id}: ${message}` })
      const content = yield* storage.read(key)
      if (Option.isNone(content)) return yield* inspectionUnavailable(id)
      if (content.value.size !== declaredSize) return yield* sizeMismatch(String(content.value.size))
      const dir = yield* fs.makeTempDirectoryScoped({ prefix: "upload-" })
      const file = path.join(dir, "media")
      const first: Array<Uint8Array> = []
      let size = 0
      yield* content.value.body.pipe(
        Stream.mapEffect((chunk) => {
          if (size < SNIFF_BYTES) first.push(chunk)
          size += chunk.length
          return size > declaredSize ? Effect.fail(sizeMismatch("more than the")) : Effect.succeed(chunk)
        }),
        Stream.run(fs.sink(file))
      )
      if (size !== declaredSize) return yield* sizeMismatch(String(size))
      const headBytes = new Uint8Array(Math.min(size, SNIFF_BYTES))
      let at = 0
      for (const chunk of first) {
        const part = chunk.subarray(0, headBytes.length - at)
        headBytes.set(part, at)
        at += part.length
      }
      const sniffed = yield* inspector.sniff(headBytes)
      const declared = `${KIND_NAMES[upload.kind]} (${upload.declared_mime_type})`
      if (Option.isNone(sniffed)) {
        return yield* invalidContent(`the bytes are not of a known media type, but ${declared} was declared.`)
      }
      const real = sniffed.value
      if (real.mimeType !== upload.declared_mime_type || real.kind !== upload.kind) {
        return yield* invalidContent(
          `the bytes are ${describeType(real.mimeType)} (${real.mimeType}), but ${declared} was declared.`
        )
      }
      return yield* inspector.probe(file, { mimeType: real.mimeType, kind: upload.kind }, size).pipe(
        Effect.catchTag("InspectError", (e): Effect.Effect<never, InspectionUnavailable | InvalidUploadContent> => {
          if (e.reason === "unavailable") return Effect.fail(inspectionUnavailable(id))
          // The spec's code for a video or audio whose real duration cannot be read.
          return upload.kind === "image"
            ? Effect.fail(invalidContent(`${e.message}.`))
            : Effect.fail(
              new InvalidUploadContent({ code: DURATION_UNREADABLE, message: `Upload ${id}: ${e.message}.` })
            )
        })
      )
    }).pipe(
      Effect.catchTags({
        StorageError: storageFailureForCaller("reading an upload failed"),
        SystemError: (e) =>
          Effect.zipRight(
            Effect.logError("a temporary file for an upload failed", e),
            Effect.fail(inspectionUnavailable(upload.id))
          ),
        BadArgument: (e) => Effect.die(e)
      }),
      Effect.scoped
    )
})
