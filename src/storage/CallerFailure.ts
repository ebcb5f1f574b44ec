import { Effect } from "effect"
import { InternalError } from "../platform/Failure.ts"
import { StorageUnavailable } from "./Errors.ts"
import type { StorageError } from "./StorageError.ts"

/** Seconds a caller is told to wait while the store is away: past a blip, soon enough to see it back. */
export const STORAGE_RETRY_AFTER_S = 10

/** The 503 a caller gets while object storage is away or full. */
export const storageUnavailable = (error: Pick<StorageError, "fault">) =>
  new StorageUnavailable({
    message: error.fault === "full"
      ? "Object storage is full; try again later."
      : "Object storage is unavailable; try again shortly.",
    retryAfter: STORAGE_RETRY_AFTER_S
  })

/**
 * A storage failure as a caller sees it, logged with `what` first: the store
 * away, full or refusing is 503 `storage_unavailable` with `Retry-After`
 * (never the caller's fault, and a 500 would say the service is broken); an
 * argument the store cannot take is a bug of ours, 500.
 */
export const storageFailureForCaller =
  (what: string) => (error: StorageError): Effect.Effect<never, InternalError | StorageUnavailable> =>
    Effect.zipRight(
      Effect.logError(what, error),
      Effect.fail<InternalError | StorageUnavailable>(
        error.fault === "invalid" ? new InternalError() : storageUnavailable(error)
      )
    )
