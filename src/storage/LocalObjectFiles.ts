import { FileSystem, Path } from "@effect/platform"
import type { PlatformError } from "@effect/platform/Error"
import { Data, Effect, Option, Sink, Stream } from "effect"
import { randomBase62 } from "../platform/Ids.ts"
import type { ByteRange, ObjectContent, ObjectInfo } from "./ObjectStorageBackend.ts"
import { checkContentType, checkKey, StorageError, type StorageFault } from "./StorageError.ts"

/** An upload's body ended before, or ran past, the length it was signed for. */
export class BodyLengthMismatch extends Data.TaggedError("BodyLengthMismatch")<{
  readonly expected: number
  readonly received: number
}> {}

const META_SUFFIX = "~meta.json"
const TEMP_DIR = "~tmp"
const DEFAULT_TYPE = "application/octet-stream"
const CHUNK_BYTES = 64 * 1024

/**
 * What a file system error means for the store: no space (ENOSPC, EDQUOT) is
 * `full`; what waiting cannot change is `refused`: permissions (EACCES,
 * EPERM), a read-only file system (EROFS), a file where a folder should be
 * or the reverse (ENOTDIR, EISDIR: the store's tree is damaged); anything
 * else (EIO, EAGAIN, ...) is `unavailable`.
 */
const faultOf = (e: PlatformError): StorageFault => {
  const code = (e as { readonly cause?: { readonly code?: unknown } }).cause?.code
  if (code === "ENOSPC" || code === "EDQUOT") return "full"
  if (["EACCES", "EPERM", "EROFS", "ENOTDIR", "EISDIR"].includes(String(code))) return "refused"
  return "unavailable"
}

/** ENOENT, or ENOTDIR when a parent of the path is a file: either way no such object. */
const isAbsent = (e: PlatformError) =>
  e._tag === "SystemError" && (e.reason === "NotFound" || e.reason === "BadResource")

/**
 * Objects as files under `root` (`DATA_DIR/objects`): the bytes at `<key>`,
 * the content type beside them in `<key>~meta.json`, writes in progress in
 * `~tmp/`. `~` cannot occur in a key, so none of these names is an object's.
 * A write lands in `~tmp/` and is renamed into place, sidecar first and bytes
 * last, so a reader sees the old object or the new one, never a partial file.
 * As in any file system, a key cannot be both an object and a prefix of
 * other keys (S3 allows that); the service's key schemes never need it.
 */
export const makeLocalObjectFiles = (root: string) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const path = yield* Path.Path
    const tempDir = path.join(root, TEMP_DIR)
    yield* fs.makeDirectory(tempDir, { recursive: true }).pipe(Effect.orDie)

    const failure = (what: string, key: string) => (cause: PlatformError) =>
      new StorageError({
        message: `Local object store: cannot ${what} ${key}: ${cause.message}`,
        fault: faultOf(cause),
        cause
      })
    const dataPath = (key: string) => path.join(root, ...key.split("/"))

    /** Puts a complete file of `~tmp/` in place under `key`: its content type beside it first, then the bytes. */
    const land = (key: string, temp: string, contentType: string) => {
      const target = dataPath(key)
      return Effect.gen(function*() {
        yield* fs.writeFileString(temp + META_SUFFIX, JSON.stringify({ content_type: contentType }))
        yield* fs.makeDirectory(path.dirname(target), { recursive: true })
        yield* fs.rename(temp + META_SUFFIX, target + META_SUFFIX)
        yield* fs.rename(temp, target)
      }).pipe(Effect.mapError(failure("store", key)))
    }

    /**
     * Runs `f` with a fresh name in `~tmp/`; whatever of that file and its
     * sidecar is left when `f` ends (landed or not, also on interruption, as
     * when a client disconnects mid-upload) is removed.
     */
    const withTemp = <A, E>(f: (temp: string) => Effect.Effect<A, E>) => {
      const temp = path.join(tempDir, randomBase62())
      return f(temp).pipe(
        Effect.ensuring(
          Effect.ignore(Effect.all([fs.remove(temp, { force: true }), fs.remove(temp + META_SUFFIX, { force: true })]))
        )
      )
    }

    /** Streams `body` into place; it is stored only when exactly `length` bytes arrive. */
    const write = <E>(key: string, contentType: string, length: number, body: Stream.Stream<Uint8Array, E>) =>
      withTemp((temp) =>
        Effect.gen(function*() {
          yield* checkKey(key)
          yield* checkContentType(contentType)
          let received = 0
          yield* body.pipe(
            // The file sink refuses an empty write; an empty object is just a created file.
            Stream.filter((chunk) => chunk.length > 0),
            Stream.tap((chunk) => {
              received += chunk.length
              return received > length
                ? Effect.fail(new BodyLengthMismatch({ expected: length, received }))
                : Effect.void
            }),
            Stream.run(Sink.mapError(fs.sink(temp), failure("write", key)))
          )
          if (received !== length) return yield* new BodyLengthMismatch({ expected: length, received })
          yield* land(key, temp, contentType)
        })
      )

    /**
     * A local file stored as it is: copied into `~tmp/` in one call (the
     * kernel's copy, no bytes through this process), checked for exactly
     * `length` bytes, then renamed into place like a write.
     */
    const writeFrom = (key: string, contentType: string, length: number, source: string) =>
      withTemp((temp) =>
        Effect.gen(function*() {
          yield* checkKey(key)
          yield* checkContentType(contentType)
          yield* fs.copyFile(source, temp).pipe(Effect.mapError(failure("copy a file into", key)))
          const received = Number((yield* fs.stat(temp).pipe(Effect.mapError(failure("inspect", key)))).size)
          if (received !== length) return yield* new BodyLengthMismatch({ expected: length, received })
          yield* land(key, temp, contentType)
        })
      )

    const contentTypeOf = (key: string) =>
      fs.readFileString(dataPath(key) + META_SUFFIX).pipe(
        Effect.map((text) => String((JSON.parse(text) as { content_type?: unknown }).content_type ?? DEFAULT_TYPE)),
        Effect.catchIf(isAbsent, () => Effect.succeed(DEFAULT_TYPE)),
        Effect.mapError(failure("read the content type of", key))
      )

    const head = (key: string): Effect.Effect<Option.Option<ObjectInfo>, StorageError> =>
      Effect.gen(function*() {
        yield* checkKey(key)
        const file = dataPath(key)
        const info = yield* fs.stat(file).pipe(
          Effect.map(Option.some),
          Effect.catchIf(isAbsent, () => Effect.succeedNone),
          Effect.mapError(failure("inspect", key))
        )
        if (Option.isNone(info) || info.value.type !== "File") return Option.none()
        return Option.some({ size: Number(info.value.size), contentType: yield* contentTypeOf(key) })
      })

    /**
     * The bytes are read from a handle opened when the stream starts; if the
     * object was replaced since its size was announced the stream fails
     * rather than send bytes that do not match the announced length.
     */
    const fileBody = (
      key: string,
      size: number,
      start: number,
      length: number
    ): Stream.Stream<Uint8Array, StorageError> =>
      length === 0 ? Stream.empty : Stream.unwrapScoped(
        Effect.gen(function*() {
          const file = yield* fs.open(dataPath(key), { flag: "r" }).pipe(Effect.mapError(failure("open", key)))
          const info = yield* file.stat.pipe(Effect.mapError(failure("inspect", key)))
          if (Number(info.size) !== size) {
            return yield* new StorageError({
              message: `Local object store: ${key} changed while being read.`,
              fault: "unavailable"
            })
          }
          yield* file.seek(start, "start")
          let remaining = length
          return Stream.repeatEffectOption(Effect.suspend(() =>
            remaining === 0 ? Effect.fail(Option.none()) : file.readAlloc(Math.min(CHUNK_BYTES, remaining)).pipe(
              Effect.mapError((e) => Option.some(failure("read", key)(e))),
              Effect.flatMap(Option.match({
                onNone: () =>
                  Effect.fail(
                    Option.some(
                      new StorageError({ message: `Local object store: ${key} ended early.`, fault: "unavailable" })
                    )
                  ),
                onSome: (chunk) => {
                  remaining -= chunk.length
                  return Effect.succeed(chunk)
                }
              }))
            )
          ))
        })
      )

    const read = (key: string, range?: ByteRange): Effect.Effect<Option.Option<ObjectContent>, StorageError> =>
      Effect.gen(function*() {
        const info = yield* head(key)
        if (Option.isNone(info)) return Option.none()
        const { size, contentType } = info.value
        if (
          range !== undefined &&
          !(Number.isSafeInteger(range.start) && range.start >= 0 && range.start < size && range.end >= range.start)
        ) {
          return yield* new StorageError({
            message: `Range ${range.start}-${range.end} is outside ${key} (${size} bytes).`,
            fault: "invalid"
          })
        }
        const start = range?.start ?? 0
        const end = range === undefined ? size - 1 : Math.min(range.end, size - 1)
        return Option.some({ size, contentType, body: fileBody(key, size, start, end - start + 1) })
      })

    const remove = (key: string): Effect.Effect<void, StorageError> =>
      Effect.zipRight(
        checkKey(key),
        Effect.forEach(
          [dataPath(key), dataPath(key) + META_SUFFIX],
          (file) =>
            fs.remove(file).pipe(Effect.catchIf(isAbsent, () => Effect.void), Effect.mapError(failure("remove", key))),
          { discard: true }
        )
      )

    /**
     * A snapshot of `from` under `to`: its bytes are hard-linked (copied where
     * a link is refused) into `~tmp/`, then renamed into place like a write.
     * A write never changes a file in place, it renames a new one over the
     * name, so the link keeps the bytes as they were.
     */
    const copy = (from: string, to: string): Effect.Effect<boolean, StorageError> =>
      withTemp((temp) =>
        Effect.gen(function*() {
          yield* checkKey(from)
          yield* checkKey(to)
          const source = dataPath(from)
          const found = yield* fs.link(source, temp).pipe(
            Effect.orElse(() => fs.copyFile(source, temp)),
            Effect.as(true),
            Effect.catchIf(isAbsent, () => Effect.succeed(false)),
            Effect.mapError(failure("copy", from))
          )
          if (!found) return false
          // Read after the bytes: the service's keys keep one content type (the one their PUT URL was signed for).
          yield* land(to, temp, yield* contentTypeOf(from))
          return true
        })
      )

    /**
     * Whether objects can be written now: a byte written to `~tmp/` and
     * removed. A full disk or a store gone read-only fails it, as a real
     * write would.
     */
    const probe: Effect.Effect<void, StorageError> = withTemp((temp) =>
      fs.writeFile(temp, new Uint8Array(1)).pipe(Effect.mapError(failure("write a probe into", TEMP_DIR)))
    )

    return { write, writeFrom, head, read, remove, copy, probe }
  })
