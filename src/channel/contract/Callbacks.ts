import { Data } from "effect"
import type { Effect } from "effect"

/**
 * Upstream callbacks, an optional part of the channel contract (Adapter.ts):
 * where a protocol can call back on a status change, the engine gives the
 * adapter a per-channel callback URL in the job (`callbackUrl`) and the
 * adapter reads what arrives there. A callback is a hint and never the
 * truth: it only names tasks to poll now. Their state still comes from the
 * adapter's `poll`, so a duplicate, late, forged or lying callback changes
 * nothing but when a task is polled.
 */

/** One callback as the gateway received it: header names in lower case, the body's raw bytes. */
export interface CallbackRequest {
  readonly headers: Readonly<Record<string, string | undefined>>
  readonly body: Uint8Array
  /** When it arrived (Unix ms), for the freshness of a signed timestamp. */
  readonly now: number
}

/** The tasks a callback names. Either list may be empty; an id the channel holds no waiting task for is ignored. */
export interface CallbackHint {
  /** Upstream ids, as the adapter's `submit` returned them. */
  readonly upstreamIds: ReadonlyArray<string>
  /** The gateway's own task ids, where the protocol echoes the external id the adapter sent. */
  readonly taskIds: ReadonlyArray<string>
  /**
   * For a protocol that expects a body in the answer (a verification
   * challenge echoed back, e.g. MiniMax's): the gateway answers 200 with
   * this JSON instead of 204 with no body.
   */
  readonly answer?: { readonly json: unknown } | undefined
}

/** A callback the adapter cannot trust or read (a bad or stale signature, not its payload): nothing is polled. */
export class CallbackRefused extends Data.TaggedError("CallbackRefused")<{ readonly reason: string }> {}

/** What an adapter that takes callbacks gives for one channel (`ChannelAdapter.callbacks`). */
export interface UpstreamCallbacks {
  readonly read: (request: CallbackRequest) => Effect.Effect<CallbackHint, CallbackRefused>
}
