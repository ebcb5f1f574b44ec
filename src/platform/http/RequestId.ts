import { FiberRef } from "effect"

/**
 * The id of the request being served. Set once by the outer HTTP middleware so
 * that error bodies, logs and the `x-request-id` header all carry the same value.
 */
export const CurrentRequestId: FiberRef.FiberRef<string> = FiberRef.unsafeMake("")

/**
 * The request that plain code (no fiber: the fast routes' quick path,
 * QuickFrame.ts) is serving, while it runs synchronously: what
 * `CurrentRequestId` is to a fiber, and what `Fiber.getCurrentFiber` is to
 * Effect. It is set around a call that starts work for a request and put
 * back after it, so what that call does at once (a driver's call sending a
 * statement) can be told to be the request's (test/support/requestWork.ts
 * counts by it); empty at any other time.
 */
export const PlainRequest = { current: "" }
