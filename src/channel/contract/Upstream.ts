import { Data } from "effect"
import type { Effect, Stream } from "effect"
import type { GenerationError, GenerationEvent, ImageJob, VideoJob } from "./Generation.ts"
import type { Charge, Usage } from "./Usage.ts"

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
  /** The upstream answered with the results at once (an images API), and the usage its answer reports. */
  Finished: { readonly outputs: ReadonlyArray<FinishedOutput>; readonly usage?: Usage | undefined }
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
 * to callers. A finished task says what the provider charges for it, by the
 * provider's own rules (Usage.ts, `Charge`): the usage its answer reports and
 * whether it bills the task; left out, a success counts as billed and a
 * failure as not.
 */
export type UpstreamState = Data.TaggedEnum<{
  Pending: { readonly progress?: number | undefined; readonly answer?: unknown }
  Succeeded: { readonly results: ReadonlyArray<ResultRef>; readonly answer?: unknown } & Charge
  Failed: { readonly error: GenerationError; readonly answer?: unknown } & Charge
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
  /**
   * Deletes the provider's copy of a finished task (its record, and with it
   * the prompt, references and outputs it keeps), where the protocol has such
   * a delete: asked once a task of a group that minimises data ended
   * (docs/operating.md, Data minimisation). `gone`: the provider no longer
   * had it. Without `forget`, the provider's copy is left to its own expiry.
   */
  readonly forget?: ((upstreamId: string) => Effect.Effect<"deleted" | "gone", GenerationError>) | undefined
  /**
   * The provider's own record of the tasks it ran in a window, for
   * reconciliation (docs/operating.md, Reconciling a channel): each task of
   * the window's upstream models with its creation time and, where the
   * record tells them, its usage and whether it is billed. Without `list`,
   * a channel cannot be reconciled.
   */
  readonly list?: ((window: ListWindow) => Effect.Effect<ReadonlyArray<ListedTask>, GenerationError>) | undefined
}

/**
 * A confirmed cancel with what the provider charges for it, where it bills
 * some cancels (Replicate: a prediction cancelled after it started). A bare
 * `cancelled` is a cancel the provider does not bill.
 */
export interface CancelledWithCharge extends Charge {
  readonly _tag: "Cancelled"
  readonly billed: boolean
}

/** What an upstream answered to a cancel. */
export type CancelOutcome = "cancelled" | "not_cancellable" | CancelledWithCharge

/** A confirmed cancel the provider bills (or not) as `charge` says. */
export const cancelledWith = (charge: { readonly billed: boolean; readonly usage?: Usage | undefined }) =>
  ({ _tag: "Cancelled", ...charge }) as CancelledWithCharge

/** Whether the upstream confirmed the cancel. */
export const isCancelled = (outcome: CancelOutcome): outcome is "cancelled" | CancelledWithCharge =>
  outcome !== "not_cancellable"

/** The window a reconciliation asks the provider about. */
export interface ListWindow {
  /** From (inclusive) and to (exclusive), in ms. */
  readonly from: number
  readonly to: number
  /**
   * The upstream models the channel's routes name for this kind: a provider
   * that lists by model (a marketplace's endpoints) is asked for these, and
   * any provider's list is kept to them, so tasks another system runs on the
   * same account are not taken for ours.
   */
  readonly upstreamModels: ReadonlyArray<string>
}

/** One task in the provider's own record. */
export interface ListedTask extends Charge {
  /** As the engine stores it: what `submit` answered for the task. */
  readonly upstreamId: string
  /** When the provider created it (ms). */
  readonly createdAt: number
  readonly model?: string | undefined
  /** The provider's own word for its state. */
  readonly status?: string | undefined
}

export type VideoUpstream = AsyncRunner<VideoJob>
export type ImageUpstream = AsyncRunner<ImageJob>

/** Whether a kind runner is asynchronous (it has `submit`) rather than an in-process generator. */
export const isAsyncRunner = (runner: unknown): runner is AsyncRunner<unknown> =>
  typeof runner === "object" && runner !== null &&
  typeof (runner as AsyncRunner<unknown>).submit === "function" &&
  typeof (runner as AsyncRunner<unknown>).poll === "function" &&
  typeof (runner as AsyncRunner<unknown>).fetchResult === "function"
