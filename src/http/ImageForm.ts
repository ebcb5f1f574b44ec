import { HttpServerRequest, Multipart } from "@effect/platform"
import { Chunk, Effect, Option, Stream } from "effect"
import * as Errors from "../api/Errors.ts"

export interface FormFile {
  /** The form field, e.g. `image` or `mask`. */
  readonly field: string
  /** Position among the files of its field, for error messages (`image[1]`). */
  readonly index: number
  readonly bytes: Uint8Array
}

export interface Form {
  readonly fields: ReadonlyMap<string, string>
  readonly files: ReadonlyArray<FormFile>
}

const MAX_FIELD_BYTES = 64 * 1024

type Part =
  | { readonly _tag: "File"; readonly field: string; readonly bytes: Uint8Array }
  | { readonly _tag: "Field"; readonly field: string; readonly value: string }

/**
 * Reads a `multipart/form-data` body with bounded parts and sizes: each file
 * at most `maxFileBytes` (413), at most `maxFiles` files, text fields each at
 * most 64 KiB, a text field given twice refused (400).
 */
export const readForm = (options: { readonly maxFileBytes: number; readonly maxFiles: number }) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    if (!/^multipart\/form-data\s*;/i.test(request.headers["content-type"] ?? "")) {
      return yield* new Errors.ApiError({
        status: 415,
        type: "invalid_request_error",
        code: "unsupported_media_type",
        message: "Send multipart/form-data with a boundary."
      })
    }
    const parts = yield* request.multipartStream.pipe(
      Multipart.withLimitsStream({
        maxParts: Option.some(options.maxFiles + 16),
        maxFieldSize: MAX_FIELD_BYTES,
        maxFileSize: Option.some(options.maxFileBytes),
        maxTotalSize: Option.some(options.maxFileBytes * options.maxFiles + MAX_FIELD_BYTES * 16)
      }),
      Stream.mapEffect((part): Effect.Effect<Part, Multipart.MultipartError> =>
        Multipart.isFile(part)
          ? Effect.map(part.contentEffect, (bytes) => ({ _tag: "File", field: part.key, bytes }))
          : Effect.succeed({ _tag: "Field", field: part.key, value: (part as Multipart.Field).value })
      ),
      Stream.runCollect,
      Effect.mapError((e) => {
        // A file over the limit fails its own content stream, which carries the parser's limit as its cause.
        const limit = (e.cause as { readonly _tag?: string; readonly limit?: string } | undefined)?.limit
        switch (e.reason === "InternalError" && limit === "MaxPartSize" ? "FileTooLarge" : e.reason) {
          case "FileTooLarge":
          case "BodyTooLarge":
            return Errors.payloadTooLarge(options.maxFileBytes)
          case "FieldTooLarge":
            return Errors.badRequest("invalid_request", `A form field is over ${MAX_FIELD_BYTES} bytes.`)
          case "TooManyParts":
            return Errors.badRequest("invalid_request", `At most ${options.maxFiles} files are accepted.`)
          default:
            return Errors.badRequest("invalid_request", "The multipart body could not be parsed.")
        }
      })
    )
    const fields = new Map<string, string>()
    const files: Array<FormFile> = []
    for (const part of Chunk.toReadonlyArray(parts)) {
      if (part._tag === "File") {
        files.push({ field: part.field, index: files.filter((f) => f.field === part.field).length, bytes: part.bytes })
        continue
      }
      if (fields.has(part.field)) return yield* Errors.badRequest("invalid_request", `Form field "${part.field}" is repeated.`)
      fields.set(part.field, part.value)
    }
    if (files.length > options.maxFiles) {
      return yield* Errors.badRequest("invalid_request", `At most ${options.maxFiles} files are accepted.`)
    }
    return { fields, files } satisfies Form
  })
