import type { Effect, Option, Stream } from "effect"
import type { StorageError } from "./StorageError.ts"

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
export interface ObjectStorageBackend {
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
  /** One cheap call that succeeds only when the store can be used now (reached, and writable for the local store). */
  readonly probe: Effect.Effect<void, StorageError>
}

/**
 * Object storage as the service's features use it: a backend (S3 when
 * `S3_BUCKET` is set, otherwise files under `DATA_DIR/objects`; see
 * ObjectStorageBackend.ts), traced, with what its calls saw of its health.
 */
export interface ObjectStorageService extends ObjectStorageBackend {
  /**
   * Succeeds when the store can be used now, judged from the calls of the
   * last seconds (a probe when there were none): an upload session is not
   * handed out, and `/readyz` is not green, while the store is away or full.
   */
  readonly available: Effect.Effect<void, StorageError>
}
