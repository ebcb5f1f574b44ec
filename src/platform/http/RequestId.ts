import { FiberRef } from "effect"

/**
 * The id of the request being served. Set once by the outer HTTP middleware so
 * that error bodies, logs and the `x-request-id` header all carry the same value.
 */
export const CurrentRequestId: FiberRef.FiberRef<string> = FiberRef.unsafeMake("")
