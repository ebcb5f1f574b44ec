import { Data, Effect } from "effect"
import { isObjectKey } from "./ObjectKey.ts"

/**
 * Why object storage failed, which decides what is done about it:
 * - `invalid`: an argument the store cannot take (a key, a content type, a
 *   length that does not match the bytes): a bug or a bad file, never retried;
 * - `unavailable`: the store could not be reached or did not answer in time,
 *   or answered 5xx: it may be back in a moment;
 * - `full`: no space left (the local store's disk, a quota): it may be freed;
 * - `refused`: the store said no for good (403, a bucket that does not exist,
 *   a size it does not take).
 */
export type StorageFault = "invalid" | "unavailable" | "full" | "refused"

/**
 * A failure of object storage. Kept apart from `ObjectStorage.ts` so the
 * implementations can raise it without importing the service they implement.
 */
export class StorageError extends Data.TaggedError("StorageError")<{
  readonly message: string
  readonly fault: StorageFault
  readonly cause?: unknown
}> {}

/** A store that is away or full may come back: what is being stored waits for it (docs/engine.md). */
export const isPassing = (e: StorageError) => e.fault === "unavailable" || e.fault === "full"

/** S3 refuses pre-signed URLs that live longer than 7 days; the local store keeps the same bound. */
export const MAX_URL_LIFETIME_S = 7 * 24 * 3600

/** A MIME type as sent in Content-Type: printable ASCII only, so it can be signed line by line. */
const CONTENT_TYPE = /^[A-Za-z0-9!#$&^_.+-]+\/[A-Za-z0-9!#$&^_.+-]+(\s*;[\x20-\x7e]*)?$/

const invalid = (message: string) => Effect.fail(new StorageError({ message, fault: "invalid" }))

export const checkKey = (key: string): Effect.Effect<void, StorageError> =>
  isObjectKey(key) ? Effect.void : invalid(`Invalid object key ${JSON.stringify(key)}.`)

export const checkContentType = (contentType: string): Effect.Effect<void, StorageError> =>
  contentType.length <= 255 && CONTENT_TYPE.test(contentType)
    ? Effect.void
    : invalid(`Invalid content type ${JSON.stringify(contentType)}.`)

export const checkLifetime = (expiresInS: number): Effect.Effect<void, StorageError> =>
  Number.isInteger(expiresInS) && expiresInS >= 1 && expiresInS <= MAX_URL_LIFETIME_S
    ? Effect.void
    : invalid(`A URL lifetime must be a whole number of seconds from 1 to ${MAX_URL_LIFETIME_S}; got ${expiresInS}.`)

export const checkLength = (contentLength: number): Effect.Effect<void, StorageError> =>
  Number.isSafeInteger(contentLength) && contentLength >= 0
    ? Effect.void
    : invalid(`Invalid content length ${contentLength}.`)

/** Every input of a pre-signed PUT, checked alike by both backends. */
export const checkPresignPut = (
  key: string,
  options: { readonly contentType: string; readonly contentLength: number; readonly expiresInS: number }
): Effect.Effect<void, StorageError> =>
  Effect.all([
    checkKey(key),
    checkContentType(options.contentType),
    checkLength(options.contentLength),
    checkLifetime(options.expiresInS)
  ], { discard: true })
