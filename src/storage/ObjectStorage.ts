import { Context, Effect, Layer, Option, type Stream } from "effect"
import { AppConfig } from "../platform/AppConfig.ts"
import { LocalObjectStore, makeLocalObjectStorage } from "./LocalObjectStorage.ts"
import type { StorageError } from "./StorageError.ts"

export { StorageError } from "./StorageError.ts"

export interface ObjectInfo {
  /** The whole object's size in bytes, also when a range of it is read. */
  readonly size: number
  readonly contentType: string
}

/** Bytes `start` to `end` of an object, both inclusive, as in an HTTP `Range`. */
export interface ByteRange {
  readonly start: number
  readonly end: number
}

export interface ObjectContent extends ObjectInfo {
  /** The requested bytes, streamed from the backend as they are consumed. */
  readonly body: Stream.Stream<Uint8Array, StorageError>
}

export interface PresignedPut {
  readonly url: string
  /** Headers the uploader must send as they are; Content-Length is bound too and comes from the body. */
  readonly headers: Record<string, string>
  /** Unix seconds. */
  readonly expiresAt: number
}

export interface PresignedGet {
  /** To be requested as is, keeping the whole query string. */
  readonly url: string
  /** Unix seconds. */
  readonly expiresAt: number
}

/**
 * Object storage behind one interface: S3 (or an S3-compatible service)
 * when `S3_BUCKET` is set, otherwise files under `DATA_DIR/objects` served by
 * this service at `/storage/...`. Pre-signed URLs behave alike in both: a PUT
 * URL binds the method, the key, the exact Content-Type and Content-Length,
 * and an expiry; a GET URL binds the method, the key and an expiry.
 * Keys are `[A-Za-z0-9._-]` segments joined by `/` (src/storage/ObjectKey.ts);
 * any other key fails with StorageError.
 */
export interface ObjectStorageService {
  readonly put: (key: string, body: Uint8Array, contentType: string) => Effect.Effect<void, StorageError>
  /**
   * Stores `body` as it is read, never whole in memory (a re-hosted result
   * may be a gigabyte). It must hold exactly `contentLength` bytes; otherwise
   * the put fails and nothing is stored.
   */
  readonly putStream: (
    key: string,
    body: Stream.Stream<Uint8Array, StorageError>,
    contentLength: number,
    contentType: string
  ) => Effect.Effect<void, StorageError>
  /**
   * Stores the local file at `path` (one this process wrote, such as a
   * downloaded result), which must hold exactly `contentLength` bytes;
   * otherwise the put fails and nothing is stored. The local store copies it
   * in one call, without passing its bytes through this process.
   */
  readonly putFile: (
    key: string,
    path: string,
    contentLength: number,
    contentType: string
  ) => Effect.Effect<void, StorageError>
  readonly head: (key: string) => Effect.Effect<Option.Option<ObjectInfo>, StorageError>
  /** A range must start inside the object; its end is clamped to the last byte. */
  readonly read: (key: string, range?: ByteRange) => Effect.Effect<Option.Option<ObjectContent>, StorageError>
  /** Removing a missing object succeeds. */
  readonly remove: (key: string) => Effect.Effect<void, StorageError>
  /**
   * Copies the object at `from`, bytes and content type, to `to`, replacing
   * what is there; false when there is no object at `from`. The copy is a
   * snapshot: writing `from` afterwards does not change `to`.
   */
  readonly copy: (from: string, to: string) => Effect.Effect<boolean, StorageError>
  readonly presignPut: (
    key: string,
    options: { readonly contentType: string; readonly contentLength: number; readonly expiresInS: number }
  ) => Effect.Effect<PresignedPut, StorageError>
  readonly presignGet: (
    key: string,
    options: { readonly expiresInS: number }
  ) => Effect.Effect<PresignedGet, StorageError>
}

/** One span per call, so a task's trace shows its storage steps; a read's span ends when its stream is handed over. */
const traced = (backend: "s3" | "local", storage: ObjectStorageService): ObjectStorageService => {
  const span = (name: string, key: string, extra: Record<string, unknown> = {}) =>
    Effect.withSpan(`ObjectStorage.${name}`, {
      attributes: { "storage.backend": backend, "object.key": key, ...extra }
    })
  return {
    put: (key, body, contentType) =>
      storage.put(key, body, contentType).pipe(span("put", key, { "object.size": body.length })),
    putStream: (key, body, contentLength, contentType) =>
      storage.putStream(key, body, contentLength, contentType).pipe(
        span("putStream", key, { "object.size": contentLength })
      ),
    putFile: (key, path, contentLength, contentType) =>
      storage.putFile(key, path, contentLength, contentType).pipe(
        span("putFile", key, { "object.size": contentLength })
      ),
    head: (key) => storage.head(key).pipe(span("head", key)),
    read: (key, range) =>
      storage.read(key, range).pipe(
        span("read", key, range === undefined ? {} : { "object.range": `${range.start}-${range.end}` })
      ),
    remove: (key) => storage.remove(key).pipe(span("remove", key)),
    copy: (from, to) => storage.copy(from, to).pipe(span("copy", to, { "object.source_key": from })),
    presignPut: (key, options) =>
      storage.presignPut(key, options).pipe(span("presignPut", key, { "object.size": options.contentLength })),
    presignGet: (key, options) => storage.presignGet(key, options).pipe(span("presignGet", key))
  }
}

export class ObjectStorage extends Context.Tag("ObjectStorage")<ObjectStorage, ObjectStorageService>() {
  /** The backend chosen by the configuration, and the local store's HTTP side (none with S3). */
  static readonly layer = Layer.unwrapEffect(
    Effect.map(AppConfig, (config) =>
      Option.match(config.s3, {
        onSome: (s3) =>
          Layer.merge(
            Layer.scoped(
              ObjectStorage,
              // Loaded only when S3 is configured: the AWS SDK is the largest package the service uses.
              Effect.promise(() => import("./S3ObjectStorage.ts")).pipe(
                Effect.flatMap(({ makeS3ObjectStorage }) => makeS3ObjectStorage(s3)),
                Effect.map((storage) => traced("s3", storage))
              )
            ),
            Layer.succeed(LocalObjectStore, Option.none())
          ),
        onNone: () =>
          Layer.effectContext(
            Effect.map(makeLocalObjectStorage, ({ storage, store }) =>
              Context.make(ObjectStorage, traced("local", storage)).pipe(
                Context.add(LocalObjectStore, Option.some(store))
              ))
          )
      }))
  )
}
