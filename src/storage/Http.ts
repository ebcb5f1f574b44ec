import { HttpApiBuilder, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Option, Stream } from "effect"
import { GatewayApi } from "../Api.ts"
import { notFound } from "../platform/http/HttpFailure.ts"
import { storageFailureForCaller } from "./CallerFailure.ts"
import { IncompleteBody, InvalidSignature, ObjectNotFound, UrlExpired } from "./Errors.ts"
import { LocalObjectStore, type SignedRequest } from "./LocalObjectStorage.ts"
import { serveObject } from "./ServeObjectHttp.ts"

/** An upload that sends nothing for this long is abandoned rather than holding a connection and a temp file. */
const UPLOAD_IDLE = "30 seconds"

const single = (value: string | ReadonlyArray<string> | undefined) => typeof value === "string" ? value : undefined

/** The object key a request's signed URL grants, or 403 (404 when objects live in S3). */
const authorize = (method: SignedRequest["method"], segment: string) =>
  Effect.gen(function*() {
    const local = yield* LocalObjectStore
    if (Option.isNone(local)) {
      return yield* notFound("not_found", "Objects are stored in S3; this service does not serve /storage URLs.")
    }
    const request = yield* HttpServerRequest.HttpServerRequest
    const params = yield* HttpServerRequest.ParsedSearchParams
    const check = yield* local.value.verify({
      method,
      segment,
      expires: single(params["X-Expires"]),
      signature: single(params["X-Signature"]),
      contentType: request.headers["content-type"] ?? "",
      contentLength: request.headers["content-length"] ?? ""
    })
    switch (check._tag) {
      case "Valid":
        return { key: check.key, store: local.value, request }
      case "Expired":
        return yield* new UrlExpired()
      case "Invalid":
        return yield* new InvalidSignature({
          message: method === "PUT"
            ? "The URL's signature does not match this request: method, object, Content-Type and Content-Length must be those it was issued for."
            : "The URL's signature does not match this request: it is not a download URL for this object, or it was altered."
        })
    }
  })

const putObject = (segment: string) =>
  Effect.gen(function*() {
    const { key, request, store } = yield* authorize("PUT", segment)
    // The signature covered Content-Length, so it is present and is the length the uploader was granted.
    const length = Number(request.headers["content-length"])
    const body = request.stream.pipe(
      Stream.mapError(() =>
        new IncompleteBody({ message: "The upload broke off before its Content-Length was sent." })
      ),
      Stream.timeoutFail(
        () => new IncompleteBody({ message: `The upload sent nothing for ${UPLOAD_IDLE}; nothing was stored.` }),
        UPLOAD_IDLE
      )
    )
    yield* store.receive(key, request.headers["content-type"] ?? "", length, body).pipe(
      Effect.catchTags({
        BodyLengthMismatch: (e) =>
          Effect.fail(
            new IncompleteBody({
              message:
                `The body had ${e.received} bytes where Content-Length announced ${e.expected}; nothing was stored.`
            })
          ),
        StorageError: storageFailureForCaller("object storage failed")
      })
    )
    return HttpServerResponse.empty({ status: 200 })
  })

const getObject = (segment: string) =>
  Effect.flatMap(authorize("GET", segment), ({ key }) => serveObject(key, { notFound: () => new ObjectNotFound() }))

export const StorageLive = HttpApiBuilder.group(GatewayApi, "storage", (handlers) =>
  handlers
    .handle("putObject", ({ path }) => putObject(path.key))
    .handle("getObject", ({ path }) => getObject(path.key)))
