import { Path } from "@effect/platform"
import { Clock, Context, Effect, type Option, Stream } from "effect"
import { AppConfig } from "../platform/AppConfig.ts"
import { constantTimeEqual } from "../platform/Keys.ts"
import { Secrets } from "../platform/Secrets.ts"
import { type BodyLengthMismatch, makeLocalObjectFiles } from "./LocalObjectFiles.ts"
import { isObjectKey } from "./ObjectKey.ts"
import type { ObjectStorageBackend } from "./ObjectStorageBackend.ts"
import { checkKey, checkLifetime, checkPresignPut, StorageError } from "./StorageError.ts"

/** The parts of a `/storage/<segment>?X-Expires=…&X-Signature=…` request that its signature covers. */
export interface SignedRequest {
  readonly method: "GET" | "PUT"
  readonly segment: string
  readonly expires: string | undefined
  readonly signature: string | undefined
  /** As sent; empty when absent. Signed only for PUT. */
  readonly contentType: string
  readonly contentLength: string
}

export type SignatureCheck =
  | { readonly _tag: "Valid"; readonly key: string }
  | { readonly _tag: "Invalid" }
  | { readonly _tag: "Expired" }

/** The HTTP side of the local store, used by the `/storage` routes. */
export interface LocalObjectStoreService {
  readonly verify: (request: SignedRequest) => Effect.Effect<SignatureCheck>
  /** Streams an upload into place; it is stored only when exactly `length` bytes arrive. */
  readonly receive: <E>(
    key: string,
    contentType: string,
    length: number,
    body: Stream.Stream<Uint8Array, E>
  ) => Effect.Effect<void, StorageError | BodyLengthMismatch | E>
}

/** Present only when objects are stored locally; with S3 the `/storage` routes answer 404. */
export class LocalObjectStore extends Context.Tag("LocalObjectStore")<
  LocalObjectStore,
  Option.Option<LocalObjectStoreService>
>() {}

/**
 * A key travels in one URL path segment (a path parameter cannot hold `/`),
 * with `~` for `/`: `~` never occurs in a key, and unlike `%2F` it survives
 * proxies that decode or normalise paths.
 */
export const keyToSegment = (key: string) => key.replaceAll("/", "~")
export const segmentToKey = (segment: string) => segment.replaceAll("~", "/")

const EXPIRES = /^\d{1,12}$/

/**
 * The local store: files under `DATA_DIR/objects`, and URLs under
 * `PUBLIC_BASE_URL/storage/` that work like S3 pre-signed URLs. The signature
 * is a base64url HMAC-SHA256 (key from Secrets) over
 * `v1 \n method \n key \n expiry \n content-type \n content-length`; the last two
 * are empty for GET. HEAD is answered with a GET URL, as it reveals nothing more.
 */
export const makeLocalObjectStorage = Effect.gen(function*() {
  const config = yield* AppConfig
  const secrets = yield* Secrets
  const path = yield* Path.Path
  const files = yield* makeLocalObjectFiles(path.join(config.dataDir, "objects"))

  const sign = (
    method: SignedRequest["method"],
    key: string,
    expires: string,
    contentType: string,
    contentLength: string
  ) => secrets.signStorageUrl(["v1", method, key, expires, contentType, contentLength].join("\n"))
  const nowS = Effect.map(Clock.currentTimeMillis, (ms) => Math.floor(ms / 1000))
  const urlOf = (key: string, expiresAt: number, signature: string) =>
    `${config.publicBaseUrl}/storage/${keyToSegment(key)}?X-Expires=${expiresAt}&X-Signature=${signature}`

  const lengthMismatch = (key: string) => (e: BodyLengthMismatch) =>
    new StorageError({
      message: `Local object store: ${key} got ${e.received} bytes where ${e.expected} were announced.`,
      fault: "invalid",
      cause: e
    })
  const putStream: ObjectStorageBackend["putStream"] = (key, body, contentLength, contentType) =>
    files.write(key, contentType, contentLength, body).pipe(Effect.catchTag("BodyLengthMismatch", lengthMismatch(key)))

  const storage: ObjectStorageBackend = {
    put: (key, body, contentType) => putStream(key, Stream.succeed(body), body.length, contentType),
    putStream,
    putFile: (key, path, contentLength, contentType) =>
      files.writeFrom(key, contentType, contentLength, path).pipe(
        Effect.catchTag("BodyLengthMismatch", lengthMismatch(key))
      ),
    head: files.head,
    read: files.read,
    remove: files.remove,
    copy: files.copy,
    probe: files.probe,
    presignPut: (key, { contentLength, contentType, expiresInS }) =>
      Effect.gen(function*() {
        yield* checkPresignPut(key, { contentType, contentLength, expiresInS })
        const expiresAt = (yield* nowS) + expiresInS
        const signature = yield* sign("PUT", key, String(expiresAt), contentType, String(contentLength))
        return { url: urlOf(key, expiresAt, signature), headers: { "Content-Type": contentType }, expiresAt }
      }),
    presignGet: (key, { expiresInS }) =>
      Effect.gen(function*() {
        yield* checkKey(key)
        yield* checkLifetime(expiresInS)
        const expiresAt = (yield* nowS) + expiresInS
        const signature = yield* sign("GET", key, String(expiresAt), "", "")
        return { url: urlOf(key, expiresAt, signature), expiresAt }
      })
  }

  const store: LocalObjectStoreService = {
    verify: (request) =>
      Effect.gen(function*() {
        const key = segmentToKey(request.segment)
        const { expires, signature } = request
        if (!isObjectKey(key) || expires === undefined || !EXPIRES.test(expires) || signature === undefined) {
          return { _tag: "Invalid" } as const
        }
        const [contentType, contentLength] = request.method === "PUT"
          ? [request.contentType, request.contentLength]
          : ["", ""]
        const expected = yield* sign(request.method, key, expires, contentType, contentLength)
        if (!constantTimeEqual(expected, signature)) return { _tag: "Invalid" } as const
        return (yield* nowS) > Number(expires) ? { _tag: "Expired" } as const : { _tag: "Valid", key } as const
      }),
    receive: files.write
  }

  return { storage, store }
})
