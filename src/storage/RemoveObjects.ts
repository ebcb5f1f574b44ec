import { Effect, Either } from "effect"
import type { ObjectStorageService } from "./ObjectStorageBackend.ts"

/** Objects removed at once by one sweeper: a few, so a sweep never floods the store or the event loop. */
const REMOVALS_AT_ONCE = 4

/**
 * Removes the objects of each row (a sweep's claimed batch) and answers the
 * ids of the rows whose objects are all gone; an object already missing
 * counts as removed. A row whose removal failed is logged with `what` and
 * left out, so the sweeper leaves it under its lease and the next sweep tries
 * it again.
 */
export const removeObjectsOf = <R extends { readonly id: string }>(
  storage: ObjectStorageService,
  rows: ReadonlyArray<R>,
  keysOf: (row: R) => ReadonlyArray<string>,
  what: string
): Effect.Effect<Array<string>> =>
  Effect.map(
    Effect.forEach(rows, (row) =>
      Effect.forEach(keysOf(row), (key) => storage.remove(key), { discard: true }).pipe(
        Effect.as(row.id),
        Effect.tapError((e) => Effect.logWarning(`removing ${what} failed; tried again after its lease`, e)),
        Effect.either
      ), { concurrency: REMOVALS_AT_ONCE }),
    (results) => results.filter(Either.isRight).map((r) => r.right)
  )
