import { Data, Effect, Stream } from "effect"
import type { VideoModelCapability } from "../../catalog/contract/Capabilities.ts"
import type { ImageModelCapability } from "../../catalog/contract/ImageCapabilities.ts"
import type { ValidImageRequest, ValidVideoRequest } from "../../catalog/contract/Requests.ts"
import type { Charge } from "./Usage.ts"

/**
 * In-process generation, the part of the channel contract (Adapter.ts) the
 * engine drives today: a runner turns one claimed task into a stream of
 * progress reports ending in its outputs. The engine persists progress,
 * stores outputs as assets and writes the terminal state; a runner never
 * touches the database or the object store.
 */
export interface VideoJob {
  readonly taskId: string
  readonly capability: VideoModelCapability
  readonly request: ValidVideoRequest
  /** The model id the channel's upstream knows (`upstream_model` in config; the public id by default). */
  readonly upstreamModel: string
  /**
   * The bytes of one reference image of the request (`url` as the request
   * holds it), for upstreams that take bytes rather than URLs: fetched when
   * asked, through the same guarded fetcher as image inputs (checked hops,
   * no private addresses unless allowed, bounded in size and time). `where`
   * names the field in the error a caller sees.
   */
  readonly readImage: (url: string, where: string) => Effect.Effect<Uint8Array, GenerationError>
  /** Where the upstream may call back on a status change (Callbacks.ts), when the channel takes callbacks. */
  readonly callbackUrl?: string | undefined
}

/** An image task with its input images already fetched, so a generator needs no network or storage. */
export interface ImageJob {
  readonly taskId: string
  readonly capability: ImageModelCapability
  readonly request: ValidImageRequest
  readonly upstreamModel: string
  readonly inputs: { readonly images: ReadonlyArray<Uint8Array>; readonly mask: Uint8Array | null }
  /** As VideoJob's. */
  readonly callbackUrl?: string | undefined
}

export type GenerationEvent = Data.TaggedEnum<{
  /** Percent done, 0 to 100, of the generation itself. */
  Progress: { readonly percent: number }
  /** One finished file. */
  Output: {
    readonly bytes: Uint8Array
    readonly mimeType: string
    readonly extension: string
    readonly width?: number | undefined
    readonly height?: number | undefined
    readonly durationMs?: number | undefined
    /** Image outputs: `png`, `jpeg` or `webp`. */
    readonly format?: string | undefined
  }
  /**
   * What a synchronous upstream behind the runner charges for this run, as
   * its answer says (Usage.ts): the usage it reports and whether it bills
   * it. A runner with no upstream (the sandbox) reports none.
   */
  Charge: Charge
}>
export const GenerationEvent = Data.taggedEnum<GenerationEvent>()

/**
 * Why a generation did not produce its outputs. `transient` failures are
 * retried by the engine's schedule; the rest end the task at once. `code`,
 * `message` and `retryable` become the task's error object, so they must not
 * reveal internal channels, balances or upstream request ids.
 */
export class GenerationError extends Data.TaggedError("GenerationError")<{
  readonly code: string
  readonly message: string
  readonly retryable: boolean
  readonly transient: boolean
  /** For a transient failure: how long the upstream asked to be left alone (see RetryHint.ts). */
  readonly retryAfterMs?: number | undefined
  /**
   * A submit whose fate is unknown (time-out or reset after the request was
   * sent): the engine asks the adapter's `find` before anything else and
   * never submits blindly again.
   */
  readonly ambiguous?: boolean | undefined
  /**
   * The upstream certainly did not take the request (refused before it was
   * sent, throttled, overloaded, or refused this channel's credentials):
   * once this channel's retries are spent, the engine moves the task to the
   * model's next channel, if it has one, instead of failing it.
   */
  readonly notAccepted?: boolean | undefined
  /**
   * Whether the upstream said this channel sends too many requests: with a
   * request budget, such an answer lowers the channel's rate for every
   * replica (channel/MeteredRunner.ts). `true` for a refusal of the request
   * rate (a 429 of the rate limit, Kling's 1302), `false` for one a slower
   * pace would not help (Kling's concurrency cap or spent resource pack,
   * though sent with a 429). Absent, a 429 in `upstream.status` or a
   * `retryAfterMs` counts as throttling.
   */
  readonly throttled?: boolean | undefined
  /**
   * What the upstream itself said, for operators only (the operator's view of
   * a task, the channel view, the log): never part of the task's error.
   */
  readonly upstream?: UpstreamAnswerDetail | undefined
}> {}

/** The upstream's own answer to a failed exchange: its HTTP status and its own code and message, as it sent them. */
export interface UpstreamAnswerDetail {
  readonly status?: number | undefined
  readonly code?: string | undefined
  readonly message?: string | undefined
}

/**
 * The same failure with the upstream's own answer beside it (operators only):
 * what an adapter returns where it maps a refusal or a failed exchange.
 */
export const withUpstream = (error: GenerationError, upstream: UpstreamAnswerDetail): GenerationError =>
  new GenerationError({
    code: error.code,
    message: error.message,
    retryable: error.retryable,
    transient: error.transient,
    retryAfterMs: error.retryAfterMs,
    ambiguous: error.ambiguous,
    notAccepted: error.notAccepted,
    throttled: error.throttled,
    upstream: { ...error.upstream, ...upstream }
  })

/** A channel's video runner: generation in this process (the sandbox, a fixture). */
export interface VideoGenerator {
  readonly generate: (job: VideoJob) => Stream.Stream<GenerationEvent, GenerationError>
}

/** A channel's image runner. */
export interface ImageGenerator {
  readonly generate: (job: ImageJob) => Stream.Stream<GenerationEvent, GenerationError>
}

export interface Reporter {
  readonly progress: (percent: number) => Effect.Effect<void>
  readonly output: (output: Omit<Extract<GenerationEvent, { _tag: "Output" }>, "_tag">) => Effect.Effect<void>
  readonly charge: (charge: Charge) => Effect.Effect<void>
}

/**
 * A runner's stream from an effect that reports as it works: progress and
 * outputs are emitted in order, the stream ends when the effect succeeds and
 * fails with its error; the work is interrupted when the consumer stops.
 */
export const eventStream = <R>(run: (report: Reporter) => Effect.Effect<void, GenerationError, R>) =>
  Stream.asyncScoped<GenerationEvent, GenerationError, R>((emit) =>
    Effect.forkScoped(
      run({
        progress: (percent) =>
          Effect.promise(() => emit.single(GenerationEvent.Progress({ percent: Math.floor(percent) }))),
        output: (output) => Effect.promise(() => emit.single(GenerationEvent.Output(output))),
        charge: (charge) => Effect.promise(() => emit.single(GenerationEvent.Charge(charge)))
      }).pipe(
        Effect.matchCauseEffect({
          onSuccess: () => Effect.promise(() => emit.end()),
          onFailure: (cause) => Effect.promise(() => emit.halt(cause))
        })
      )
    )
  )
