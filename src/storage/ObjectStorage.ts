import { Context, Effect, Layer, Option } from "effect"
import { AppConfig } from "../platform/AppConfig.ts"
import { LocalObjectStore, makeLocalObjectStorage } from "./LocalObjectStorage.ts"
import type { ObjectStorageBackend, ObjectStorageService } from "./ObjectStorageBackend.ts"
import { withHealth } from "./StorageHealth.ts"

export type {
  ByteRange,
  ObjectContent,
  ObjectInfo,
  ObjectStorageBackend,
  ObjectStorageService,
  PresignedGet,
  PresignedPut
} from "./ObjectStorageBackend.ts"
export { StorageError } from "./StorageError.ts"

/** One span per call, so a task's trace shows its storage steps; a read's span ends when its stream is handed over. */
const traced = (backend: "s3" | "local", storage: ObjectStorageBackend): ObjectStorageBackend => {
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
    presignGet: (key, options) => storage.presignGet(key, options).pipe(span("presignGet", key)),
    probe: storage.probe.pipe(span("probe", ""))
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
                Effect.flatMap((storage) => withHealth(traced("s3", storage)))
              )
            ),
            Layer.succeed(LocalObjectStore, Option.none())
          ),
        onNone: () =>
          Layer.effectContext(
            Effect.gen(function*() {
              const { storage, store } = yield* makeLocalObjectStorage
              const service = yield* withHealth(traced("local", storage))
              return Context.make(ObjectStorage, service).pipe(Context.add(LocalObjectStore, Option.some(store)))
            })
          )
      }))
  )
}
