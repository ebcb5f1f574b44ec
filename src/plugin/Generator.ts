import { Data, type Stream } from "effect"
import type { ValidVideoRequest } from "./VideoRequest.ts"
import type { VideoModelCapability } from "./Capabilities.ts"

/**
 * The generator contract (DESIGN.md, Generators): a generator turns one
 * claimed task into a stream of progress reports ending in its outputs. The
 * engine persists progress, stores outputs as assets and writes the terminal
 * state; a generator never touches the database or the object store.
 */
export interface VideoJob {
  readonly taskId: string
  readonly capability: VideoModelCapability
  readonly request: ValidVideoRequest
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
  }
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
}> {}

export interface VideoGenerator {
  readonly generate: (job: VideoJob) => Stream.Stream<GenerationEvent, GenerationError>
}
