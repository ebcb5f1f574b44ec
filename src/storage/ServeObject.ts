import { HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Option } from "effect"
import * as Errors from "../platform/http/Errors.ts"
import { resolveRange } from "./ByteRange.ts"
import { ObjectStorage, type StorageError } from "./ObjectStorage.ts"

export interface ServeOptions {
  /** The error for a missing object; callers that check access first may name their own resource. */
  readonly notFound?: () => Errors.ApiError
  /** Extra response headers, e.g. Content-Disposition or Cache-Control. */
  readonly headers?: Record<string, string>
}

const storageFailure = (error: StorageError) =>
  Effect.zipRight(Effect.logError("object storage failed", error), Effect.fail(Errors.internalError()))

/**
 * Answers the current GET or HEAD request with the object at `key`: 200 with
 * the whole object, 206 with `Content-Range` for one satisfiable range, 416
 * with `Content-Range: bytes *\/size` otherwise; HEAD gets the same headers
 * and no body. The body is streamed from storage, never held whole. Whoever
 * calls this has already decided the caller may read the object.
 */
export const serveObject = (key: string, options: ServeOptions = {}) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const storage = yield* ObjectStorage
    const notFound = () =>
      options.notFound?.() ?? Errors.notFound("object_not_found", "No object at this address.")
    const info = yield* storage.head(key)
    if (Option.isNone(info)) return yield* notFound()
    const { size, contentType } = info.value
    const common = {
      ...options.headers,
      "accept-ranges": "bytes",
      // Stored bytes come from callers: never let a browser sniff them into HTML or run them as a page.
      "x-content-type-options": "nosniff",
      "content-security-policy": "sandbox"
    }
    const range = resolveRange(request.headers["range"], size, request.headers["if-range"])
    if (range._tag === "Unsatisfiable") {
      return yield* new Errors.ApiError({
        status: 416,
        type: "invalid_request_error",
        code: "range_not_satisfiable",
        message: `The requested range is outside the object (${size} bytes).`,
        headers: { ...common, "content-range": `bytes */${size}` }
      })
    }
    const [status, start, end] = range._tag === "Partial" ? [206, range.start, range.end] : [200, 0, size - 1]
    const headers: Record<string, string> = {
      ...common,
      "content-type": contentType,
      "content-length": String(end - start + 1),
      ...(status === 206 ? { "content-range": `bytes ${start}-${end}/${size}` } : {})
    }
    if (request.method === "HEAD") return HttpServerResponse.empty({ status, headers })
    const content = yield* storage.read(key, size === 0 ? undefined : { start, end })
    if (Option.isNone(content)) return yield* notFound()
    if (content.value.size !== size) {
      return yield* Effect.fail(Errors.internalError("The object changed while being read; retry."))
    }
    return HttpServerResponse.stream(content.value.body, { status, headers })
  }).pipe(Effect.catchTag("StorageError", storageFailure))
