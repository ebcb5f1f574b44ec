import { Context, Effect, Layer } from "effect"
import {
  eventStream,
  FailureCodes,
  GenerationError,
  type ImageGenerator,
  type ImageJob
} from "../../src/channel/contract/Adapter.ts"
import { parseSize } from "../../src/channel/contract/Media.ts"
import { SandboxImageRenderer } from "./SandboxImageRenderer.ts"
import { rehearse } from "./SandboxSwitch.ts"

/**
 * The offline image generator: `generation` draws `output.count` images of
 * the prompt's scene; `edit` transforms the first input image inside the
 * mask (everywhere without one). `provider_options.sandbox` also rehearses
 * an unavailable service (`outcome: "unavailable"`), which ends in a failed
 * task with code `524`.
 */
export class SandboxImageGenerator
  extends Context.Tag("SandboxImageGenerator")<SandboxImageGenerator, ImageGenerator>()
{
  static readonly layer = Layer.effect(
    SandboxImageGenerator,
    Effect.gen(function*() {
      const renderer = yield* SandboxImageRenderer

      const generate = (job: ImageJob) =>
        eventStream(({ output, progress }) =>
          Effect.gen(function*() {
            const { renderFrom } = yield* rehearse(job.request.providerOptions, {
              code: FailureCodes.imageFailed,
              message: "The sandbox failed this task as requested by provider_options.sandbox.outcome."
            }, progress)
            const { width, height } = parseSize(job.request.size)
            const { count, format, prompt } = job.request
            for (let i = 0; i < count; i++) {
              const image = yield* (job.request.operation === "edit"
                ? renderer.edit({
                  prompt: count > 1 ? `${prompt}\u0000${i}` : prompt,
                  image: job.inputs.images[0]!,
                  mask: job.inputs.mask,
                  width,
                  height,
                  format
                })
                : renderer.render({ prompt, seed: i, width, height, format })).pipe(
                  Effect.tapError((e) => Effect.logWarning("sandbox image failed", e)),
                  Effect.mapError(() =>
                    new GenerationError({
                      code: FailureCodes.imageFailed,
                      message: "Image generation failed.",
                      retryable: true,
                      transient: true
                    })
                  )
                )
              yield* output({
                bytes: image.bytes,
                mimeType: image.mimeType,
                extension: image.format === "jpeg" ? "jpg" : image.format,
                format: image.format,
                width: image.width,
                height: image.height
              })
              yield* progress(renderFrom + ((100 - renderFrom) * (i + 1)) / count)
            }
          })
        )

      return { generate }
    })
  )
}
