import { HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Option, Predicate } from "effect"
import { InternalError } from "../platform/Failure.ts"
import { HttpFailure } from "../platform/http/HttpFailure.ts"
import { resolveRange } from "./ByteRange.ts"
import { storageFailureForCaller } from "./CallerFailure.ts"
import { ObjectStorage, type StorageError } from "./ObjectStorage.ts"

export interface ServeOptions<E> {
  /** The error for a missing object: the resource the caller asked for (an object, an asset). */
  readonly notFound: () => E
  /** Extra response headers, e.g. Content-Disposition or Cache-Control. */
  readonly headers?: Record<string, string>
}

/**
 * Answers the current GET or HEAD request with the object at `key`: 200 with
 * the whole object, 206 with `Content-Range` for one satisfiable range, 416
 * with `Content-Range: bytes *\/size` otherwise; HEAD gets the same headers
 * and no body. The body is streamed from storage, never held whole. Whoever
 * calls this has already decided the caller may read the object.
 */
export const serveObject = <E>(key: string, options: ServeOptions<E>) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const storage = yield* ObjectStorage
    const { notFound } = options
    const info = yield* storage.head(key)
    if (Option.isNone(info)) return yield* Effect.fail(notFound())
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
      return yield* new HttpFailure({
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
    if (Option.isNone(content)) return yield* Effect.fail(notFound())
    if (content.value.size !== size) {
      return yield* Effect.fail(new InternalError({ message: "The object changed while being read; retry." }))
    }
    return HttpServerResponse.stream(content.value.body, { status, headers })
  }).pipe(
    // By predicate, not catchTag: the caller's not-found error type is generic here.
    Effect.catchIf(
      (e): e is StorageError => Predicate.isTagged(e, "StorageError"),
      storageFailureForCaller("object storage failed")
    )
  )
