import { GenerationError, type VideoJob } from "../../src/channel/contract/Adapter.ts"

/**
 * What the OpenAI Videos protocol cannot carry, refused when the task
 * starts instead of silently dropped: the create takes one prompt, a
 * duration, a size and one optional `input_reference` image (the first
 * frame), nothing else. Every model of the shipped families also accepts a
 * last frame or reference media, so refusing such models at boot would
 * refuse them all; a task asks for what only some requests need.
 *
 * The refusal is final (`retryable` false, not `notAccepted`): the same
 * request fails the same way on this channel, and it is not a reason to
 * open the channel's breaker for other tasks. Codes are the spec's codes
 * for the same mistakes at creation; messages name the request's fields,
 * never the channel or the upstream.
 */

const refuse = (code: string, message: string) =>
  new GenerationError({ code, message, retryable: false, transient: false })

export const unsupported = (job: VideoJob): GenerationError | undefined => {
  const r = job.request
  const references = r.referenceImages.length + r.referenceVideos.length + r.referenceAudios.length
  if (r.mode !== null && r.mode !== "frame" && (references > 0 || r.image !== null)) {
    return refuse(
      "unsupported_reference_mode",
      `${r.model} cannot use reference_mode "${r.mode}" at present; only a first frame ("frame" mode with input.image) can be sent.`
    )
  }
  if (r.referenceImages.length > 0) {
    return refuse(
      "invalid_video_parameter",
      `${r.model} cannot use a last frame (input.reference_images in "frame" mode) at present; send the first frame (input.image) alone.`
    )
  }
  if (references > 0) {
    return refuse("invalid_video_parameter", `${r.model} cannot use reference videos or audios at present.`)
  }
  if (!r.generateAudio) {
    return refuse(
      "invalid_video_parameter",
      `${r.model} cannot leave out the sound track at present; "output.generate_audio": false is not supported.`
    )
  }
  const namespaces = Object.keys(r.providerOptions).filter((ns) => Object.keys(r.providerOptions[ns]!).length > 0)
  if (namespaces.length > 0) {
    return refuse(
      "invalid_provider_options",
      `${r.model} cannot honour "provider_options.${namespaces[0]}" at present.`
    )
  }
  return undefined
}
