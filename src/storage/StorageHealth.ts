import { Clock, Effect, Predicate } from "effect"
import type { ObjectStorageBackend, ObjectStorageService } from "./ObjectStorageBackend.ts"
import type { StorageError } from "./StorageError.ts"

/** What the calls of this long ago say of the store; older news is checked with a probe. */
const FRESH_MS = 5_000

const isStorageError = (e: unknown): e is StorageError => Predicate.isTagged(e, "StorageError")

/**
 * The backend with `available`: every call's outcome is noted (a success,
 * or a failure of the store itself, not a bad argument), so the store's
 * health is known without extra calls while it is in use. When nothing was
 * seen for `FRESH_MS`, `available` probes (ObjectStorageBackend.probe); a
 * recent failure answers at once, so a store that is away is not asked again
 * by every caller.
 */
export const withHealth = (backend: ObjectStorageBackend) =>
  Effect.gen(function*() {
    let okAt = -Infinity
    let failedAt = -Infinity
    let lastFailure: StorageError | undefined
    const noted = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
      effect.pipe(
        Effect.tapBoth({
          onSuccess: () => Effect.map(Clock.currentTimeMillis, (now) => void (okAt = now)),
          onFailure: (e) =>
            isStorageError(e) && e.fault !== "invalid"
              ? Effect.map(Clock.currentTimeMillis, (now) => {
                failedAt = now
                lastFailure = e
              })
              : Effect.void
        })
      )
    const available = Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      if (lastFailure !== undefined && failedAt > okAt && now - failedAt < FRESH_MS) return yield* lastFailure
      if (now - okAt < FRESH_MS) return
      yield* noted(backend.probe)
    })
    const service: ObjectStorageService = {
      put: (key, body, contentType) => noted(backend.put(key, body, contentType)),
      putStream: (key, body, contentLength, contentType) =>
        noted(backend.putStream(key, body, contentLength, contentType)),
      putFile: (key, path, contentLength, contentType) => noted(backend.putFile(key, path, contentLength, contentType)),
      head: (key) => noted(backend.head(key)),
      read: (key, range) => noted(backend.read(key, range)),
      remove: (key) => noted(backend.remove(key)),
      copy: (from, to) => noted(backend.copy(from, to)),
      presignPut: backend.presignPut,
      presignGet: backend.presignGet,
      probe: noted(backend.probe),
      available
    }
    return service
  })
