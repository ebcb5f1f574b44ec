import { Data } from "effect"
import type { Effect, Stream } from "effect"
import type { GenerationError, GenerationEvent, ImageJob, VideoJob } from "./Generation.ts"

/**
 * Asynchronous upstreams, the second shape of a kind runner (Adapter.ts):
 * the engine submits a task, stores the upstream id and lets the task wait
 * without a lease or a fiber; a poller per channel asks for the states of
 * all due tasks at once, then downloads the results of finished ones. An
 * adapter never touches the database or the object store: the engine
 * re-hosts, checks and stores what `fetchResult` streams.
 */

/** One finished file as an upstream answered it synchronously (same shape as a generator's output). */
export type FinishedOutput = Omit<Extract<GenerationEvent, { _tag: "Output" }>, "_tag">

export type SubmitOutcome = Data.TaggedEnum<{
  /** The upstream took the task; the engine polls it under this id. */
  Accepted: { readonly upstreamId: string }
  /** The upstream answered with the results at once (an images API). */
  Finished: { readonly outputs: ReadonlyArray<FinishedOutput> }
}>
export const SubmitOutcome = Data.taggedEnum<SubmitOutcome>()

/** Where one result of a finished upstream task is, as the adapter's `fetchResult` understands it. */
export interface ResultRef {
  readonly url: string
  /** What the upstream said the file is; the engine reads the bytes anyway. */
  readonly mimeType?: string | undefined
  /** Adapter-private details (e.g. whether the URL needs the upstream key). */
  readonly auth?: string | undefined
  /** When the upstream stops serving it (ms), where the protocol says: a result is never waited for past it. */
  readonly expiresAt?: number | undefined
}

/**
 * The normalised state of one upstream task. `answer` is the upstream's own
 * words for it (its JSON), kept for operators in `task_attempts`, never shown
 * to callers.
 */
export type UpstreamState = Data.TaggedEnum<{
  Pending: { readonly progress?: number | undefined; readonly answer?: unknown }
  Succeeded: { readonly results: ReadonlyArray<ResultRef>; readonly answer?: unknown }
  Failed: { readonly error: GenerationError; readonly answer?: unknown }
  /** A status the adapter cannot read, or the id missing from the answer: polled again until the deadline. */
  Unknown: { readonly answer?: unknown }
}>
export const UpstreamState = Data.taggedEnum<UpstreamState>()

/**
 * A kind runner for an asynchronous upstream. Errors are GenerationErrors:
 * `transient` ones are tried again; an `ambiguous` submit (time-out or reset
 * after the request was sent) is reconciled through `find` and never
 * submitted blindly a second time.
 */
export interface AsyncRunner<J> {
  readonly submit: (job: J) => Effect.Effect<SubmitOutcome, GenerationError>
  /** The states of many upstream tasks in one call where the protocol allows; ids missing from the map are Unknown. */
  readonly poll: (
    upstreamIds: ReadonlyArray<string>
  ) => Effect.Effect<ReadonlyMap<string, UpstreamState>, GenerationError>
  /**
   * How many ids one `poll` call asks the upstream about in a single request
   * (its batch query); absent when each id costs a request of its own. The
   * engine polls a batching upstream's tasks more often, since many cost one
   * request.
   */
  readonly pollBatch?: number | undefined
  /** The bytes of one result; the engine caps their size. */
  readonly fetchResult: (ref: ResultRef) => Stream.Stream<Uint8Array, GenerationError>
  /**
   * The upstream task an ambiguous submit of this job created, if any.
   * Undefined means the upstream certainly holds none, so submitting again
   * is safe. Without `find`, an ambiguous submit fails the task with its refund.
   */
  readonly find?: ((job: J) => Effect.Effect<string | undefined, GenerationError>) | undefined
  /**
   * Cancels an upstream task, where the protocol has a cancel: `cancelled`
   * when the upstream confirms it stopped (or will not start) the task,
   * `not_cancellable` when it refuses (already running, already done).
   * Without `cancel`, a task waiting upstream cannot be cancelled and goes on.
   */
  readonly cancel?: ((upstreamId: string) => Effect.Effect<CancelOutcome, GenerationError>) | undefined
}

/** What an upstream answered to a cancel. */
export type CancelOutcome = "cancelled" | "not_cancellable"

export type VideoUpstream = AsyncRunner<VideoJob>
export type ImageUpstream = AsyncRunner<ImageJob>

/** Whether a kind runner is asynchronous (it has `submit`) rather than an in-process generator. */
export const isAsyncRunner = (runner: unknown): runner is AsyncRunner<unknown> =>
  typeof runner === "object" && runner !== null &&
  typeof (runner as AsyncRunner<unknown>).submit === "function" &&
  typeof (runner as AsyncRunner<unknown>).poll === "function" &&
  typeof (runner as AsyncRunner<unknown>).fetchResult === "function"
