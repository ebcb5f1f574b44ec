import { Context, Duration, Effect, Layer, Stream } from "effect"
import { videoDimensions } from "../domain/Dimensions.ts"
import { GenerationError, GenerationEvent, type VideoGenerator, type VideoJob } from "../plugin/Generator.ts"
import { SandboxRenderer } from "./SandboxRenderer.ts"

/** Share of the progress bar the requested `delay_ms` fills before rendering starts. */
const DELAY_SHARE = 30
const DELAY_TICKS = 10

interface SandboxSwitch {
  readonly outcome?: "succeed" | "fail"
  readonly delay_ms?: number
}

/**
 * The offline generator every family can be routed to: renders a real H.264
 * MP4 of the requested duration, the model's resolution and the requested
 * aspect ratio. `provider_options.sandbox` lets a caller rehearse the slow and
 * the failing path, like a payment provider's test cards.
 */
export class SandboxGenerator extends Context.Tag("SandboxGenerator")<SandboxGenerator, VideoGenerator>() {
  static readonly layer = Layer.effect(
    SandboxGenerator,
    Effect.gen(function*() {
      const renderer = yield* SandboxRenderer

      const generate = (job: VideoJob) =>
        Stream.asyncScoped<GenerationEvent, GenerationError>((emit) => {
          const progress = (percent: number) =>
            Effect.promise(() => emit.single(GenerationEvent.Progress({ percent: Math.floor(percent) })))
          const sandbox = (job.request.providerOptions.sandbox ?? {}) as SandboxSwitch
          const delayMs = sandbox.delay_ms ?? 0
          const renderFrom = delayMs > 0 ? DELAY_SHARE : 0
          const { width, height } = videoDimensions(job.capability.resolution, job.request.aspectRatio)

          const run = Effect.gen(function*() {
            for (let tick = 1; delayMs > 0 && tick <= DELAY_TICKS; tick++) {
              yield* Effect.sleep(Duration.millis(delayMs / DELAY_TICKS))
              yield* progress((DELAY_SHARE * tick) / DELAY_TICKS)
            }
            if (sandbox.outcome === "fail") {
              return yield* new GenerationError({
                code: "video_task_failed",
                message: "The sandbox failed this task as requested by provider_options.sandbox.outcome.",
                retryable: false,
                transient: false
              })
            }
            const video = yield* renderer.renderVideo({
              prompt: job.request.prompt,
              durationS: job.request.duration,
              width,
              height,
              audio: job.request.generateAudio,
              onProgress: (percent: number) => progress(renderFrom + ((100 - renderFrom) * percent) / 100)
            }).pipe(
              Effect.scoped,
              Effect.tapError((e) => Effect.logWarning("sandbox render failed", e)),
              // The caller sees a neutral message; the cause stays in the log.
              Effect.mapError(() =>
                new GenerationError({
                  code: "video_task_failed",
                  message: "Video generation failed.",
                  retryable: true,
                  transient: true
                })
              )
            )
            yield* Effect.promise(() =>
              emit.single(GenerationEvent.Output({
                bytes: video.bytes,
                mimeType: video.mimeType,
                extension: "mp4",
                width: video.width,
                height: video.height,
                durationMs: video.durationMs
              }))
            )
          })
          return Effect.forkScoped(
            run.pipe(
              Effect.matchCauseEffect({
                onSuccess: () => Effect.promise(() => emit.end()),
                onFailure: (cause) => Effect.promise(() => emit.halt(cause))
              })
            )
          )
        })

      return { generate }
    })
  )
}
