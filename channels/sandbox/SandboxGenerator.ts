import { Context, Effect, Layer } from "effect"
import {
  eventStream,
  FailureCodes,
  GenerationError,
  type VideoGenerator,
  type VideoJob
} from "../../src/channel/contract/Adapter.ts"
import { videoDimensions } from "./Dimensions.ts"
import { SandboxRenderer } from "./SandboxRenderer.ts"
import { rehearse } from "./SandboxSwitch.ts"

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
        eventStream(({ output, progress }) =>
          Effect.gen(function*() {
            const { width, height } = videoDimensions(job.capability.resolution, job.request.aspectRatio)
            const { renderFrom } = yield* rehearse(job.request.providerOptions, {
              code: FailureCodes.videoFailed,
              message: "The sandbox failed this task as requested by provider_options.sandbox.outcome."
            }, progress)
            const video = yield* renderer.renderVideo({
              prompt: job.request.prompt,
              durationS: job.request.duration,
              width,
              height,
              audio: job.request.generateAudio,
              onProgress: (percent: number) => progress(renderFrom + ((100 - renderFrom) * percent) / 100)
            }).pipe(
              Effect.tapError((e) => Effect.logWarning("sandbox render failed", e)),
              // The caller sees a neutral message; the cause stays in the log.
              Effect.mapError(() =>
                new GenerationError({
                  code: FailureCodes.videoFailed,
                  message: "Video generation failed.",
                  retryable: true,
                  transient: true
                })
              )
            )
            yield* output({
              bytes: video.bytes,
              mimeType: video.mimeType,
              extension: "mp4",
              width: video.width,
              height: video.height,
              durationMs: video.durationMs
            })
          })
        )

      return { generate }
    })
  )
}
