import { isConflict } from "../Database.ts"
import { type Failure, InternalError, ServiceBusy } from "../Failure.ts"
import type { ErrorBody } from "./ErrorContract.ts"

/**
 * The one place a failure becomes an HTTP answer. Features raise their own
 * `Schema.TaggedError`s (each feature's `Errors.ts`, with the fields of
 * `platform/Failure.ts`); only this module, the HTTP layer and the handlers
 * know about status lines and headers.
 */

export interface ErrorAnswer {
  readonly status: number
  readonly headers: Record<string, string>
  readonly body: ErrorBody
}

/**
 * Any failure as the spec's answer: its status, the error body, `Retry-After`
 * when it says when to come back, and the headers a handler added.
 */
export const answerOf = (
  failure: Failure & { readonly headers?: Record<string, string> | undefined },
  requestId: string
): ErrorAnswer => ({
  status: failure.status,
  headers: {
    ...(failure.retryAfter === undefined ? {} : { "retry-after": String(failure.retryAfter) }),
    ...failure.headers
  },
  body: { error: { type: failure.type, code: failure.code, message: failure.message, request_id: requestId } }
})

/** What a defect or an unknown failure is answered with, after it was logged. */
export const internalError = () => new InternalError()

/**
 * What an unexpected error is answered with: 503 `service_busy` (with
 * `Retry-After`) for a transaction the database rolled back for a conflict
 * more times than it is run again, since the caller did nothing wrong and
 * nothing was done; 500 for anything else. Both are logged by the caller.
 */
export const unexpectedError = (error: unknown): Failure => isConflict(error) ? new ServiceBusy() : internalError()
