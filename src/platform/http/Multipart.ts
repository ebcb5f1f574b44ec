import { HttpServerRequest } from "@effect/platform"
import { Effect } from "effect"
import * as Multipasta from "multipasta"
import { AppConfig } from "../AppConfig.ts"
import { concatBytes } from "../Digest.ts"
import { textProblem } from "../Text.ts"
import { readBytes } from "./Body.ts"
import * as Errors from "./HttpFailure.ts"

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
const MAX_FIELDS = 16
/** Room for part headers and boundaries around the files and fields. */
const FRAMING_BYTES = 64 * 1024

const invalid = (message: string) => Errors.badRequest("invalid_request", message)

/**
 * The one reader of `multipart/form-data` bodies. The body is first read
 * whole with `readBytes` (a byte bound, 413 past it, and the body read
 * deadline, 408), then parsed in memory by multipasta, so a body that is
 * truncated, empty or lacks its closing boundary is a 400 as soon as it has
 * ended, and one that stalls ends at the deadline: no request is left
 * hanging on a parser waiting for bytes that never come (the streaming
 * parser of @effect/platform did that). Each file is at most `maxFileBytes`
 * (413), at most `maxFiles` files and 16 text fields of 64 KiB each, the
 * whole body at most `body.upload_bytes` (413); a text
 * field given twice and text the database cannot store are refused (400).
 */
export const readForm = (options: { readonly maxFileBytes: number; readonly maxFiles: number }) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const contentType = request.headers["content-type"] ?? ""
    if (!/^multipart\/form-data\s*;/i.test(contentType)) {
      return yield* Errors.unsupportedMediaType("Send multipart/form-data with a boundary.")
    }
    const { limits } = yield* AppConfig
    const bytes = yield* readBytes(
      Math.min(
        options.maxFileBytes * options.maxFiles + MAX_FIELD_BYTES * MAX_FIELDS + FRAMING_BYTES,
        limits.body.upload_bytes
      )
    )
    return yield* parseForm(contentType, bytes, options)
  })

/** Parses a complete multipart body; every failure is the spec's error. */
export const parseForm = (
  contentType: string,
  bytes: Uint8Array,
  options: { readonly maxFileBytes: number; readonly maxFiles: number }
): Effect.Effect<Form, Errors.HttpFailure> =>
  Effect.suspend(() => {
    const fields = new Map<string, string>()
    const files: Array<FormFile> = []
    let failure: Errors.HttpFailure | undefined
    let done = false
    const fail = (error: Errors.HttpFailure) => {
      failure ??= error
    }
    const named = (info: Multipasta.PartInfo, what: string) => {
      const problem = textProblem(info.name) ?? (info.filename === undefined ? undefined : textProblem(info.filename))
      if (problem !== undefined) fail(invalid(`The ${what} "${info.name}" has a name or file name that ${problem}.`))
      return problem === undefined
    }
    const parser = Multipasta.make({
      headers: { "content-type": contentType },
      maxParts: options.maxFiles + MAX_FIELDS,
      maxPartSize: options.maxFileBytes,
      maxFieldSize: MAX_FIELD_BYTES,
      onField: (info, value) => {
        if (!named(info, "form field")) return
        const text = Multipasta.decodeField(info, value)
        const problem = textProblem(text)
        if (problem !== undefined) return fail(invalid(`Form field "${info.name}" ${problem}.`))
        if (fields.has(info.name)) return fail(invalid(`Form field "${info.name}" is repeated.`))
        fields.set(info.name, text)
      },
      onFile: (info) => {
        if (!named(info, "file field")) return () => {}
        const chunks: Array<Uint8Array> = []
        return (chunk) => {
          if (chunk !== null) return void chunks.push(chunk)
          const index = files.filter((f) => f.field === info.name).length
          files.push({ field: info.name, index, bytes: concatBytes(chunks) })
        }
      },
      onError: (error) => fail(toHttpFailure(error, options)),
      onDone: () => {
        done = true
      }
    })
    parser.write(bytes)
    parser.end()
    if (failure !== undefined) return Effect.fail(failure)
    if (!done) return Effect.fail(invalid("The multipart body ended before its closing boundary."))
    if (files.length > options.maxFiles) return Effect.fail(invalid(`At most ${options.maxFiles} files are accepted.`))
    return Effect.succeed({ fields, files } satisfies Form)
  })

const toHttpFailure = (
  error: Multipasta.MultipartError,
  options: { readonly maxFileBytes: number; readonly maxFiles: number }
) => {
  switch (error._tag) {
    case "ReachedLimit":
      switch (error.limit) {
        case "MaxPartSize":
        case "MaxTotalSize":
          return Errors.payloadTooLarge(options.maxFileBytes)
        case "MaxFieldSize":
          return invalid(`A form field is over ${MAX_FIELD_BYTES} bytes.`)
        case "MaxParts":
          return invalid(`At most ${options.maxFiles} files and ${MAX_FIELDS} fields are accepted.`)
      }
    case "EndNotReached":
      return invalid("The multipart body ended in the middle of a part.")
    case "InvalidBoundary":
      return invalid("The multipart Content-Type has no usable boundary.")
    case "InvalidDisposition":
      return invalid("A multipart part has no valid Content-Disposition with a name.")
    case "BadHeaders":
      return invalid("A multipart part has malformed headers.")
  }
}
