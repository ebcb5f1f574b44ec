import { Either, Encoding } from "effect"
import type { ImageJob, VideoJob } from "../../src/channel/contract/Adapter.ts"
import type { ImageEndpoint, VideoEndpoint } from "./Endpoints.ts"

/**
 * The unified request as one model's `input` (docs/adapters/replicate.md,
 * Requests), driven by the model's entry in Endpoints.ts. A request the model
 * has no field for is refused with a message for the caller before anything
 * is sent; the route's `narrower` limits refuse most of them at creation.
 *
 * | unified                                 | Replicate input                                  |
 * |-----------------------------------------|--------------------------------------------------|
 * | input.prompt                            | the prompt field                                 |
 * | frame: input.image, reference_images[0] | first frame, then last frame                     |
 * | images: input.image, reference_images   | the reference images list                        |
 * | output.duration                         | integer seconds                                  |
 * | output.aspect_ratio                     | `aspect_ratio` (not with a first frame where the model takes the frame's shape) |
 * | the model's resolution                  | `resolution` / Kling's `mode`                    |
 * | output.generate_audio                   | `generate_audio`; `false` required where the model is silent |
 * | provider_options.<family>.*             | the model's field for each (seed, camera_fixed, negative_prompt) |
 * | image: size, format, input images       | `aspect_ratio`, `output_format`, data URIs       |
 */

type Input = Record<string, unknown>

const acceptsDuration = (d: VideoEndpoint["duration"], n: number) =>
  "values" in d ? d.values.includes(n) : n >= d.min && n <= d.max
const durationWords = (d: VideoEndpoint["duration"]) => "values" in d ? d.values.join(", ") : `${d.min} to ${d.max}`

export const videoInput = (job: VideoJob, endpoint: VideoEndpoint): Either.Either<Input, string> => {
  const r = job.request
  if (r.referenceVideos.length > 0 || r.referenceAudios.length > 0 || r.mode === "media") {
    return Either.left("Reference videos and audios are not supported by this video service.")
  }
  const images = [...(r.image ? [r.image] : []), ...r.referenceImages]
  const input: Input = { [endpoint.prompt]: r.prompt }
  if (r.mode === "images") {
    const refs = endpoint.referenceImages
    if (refs === undefined) return Either.left(`Reference mode "images" is not supported by this model.`)
    if (images.length > refs.max) return Either.left(`At most ${refs.max} reference images can be sent to this model.`)
    input[refs.field] = images.map((ref) => ref.url)
  } else if (r.mode === null || r.mode === "frame") {
    if (images.length > 2 || (images.length === 2 && endpoint.lastFrame === undefined)) {
      return Either.left(`At most ${endpoint.lastFrame === undefined ? 1 : 2} frames can be sent to this model.`)
    }
    if (images[0]) input[endpoint.firstFrame] = images[0].url
    if (images[1]) input[endpoint.lastFrame!] = images[1].url
  } else {
    return Either.left(`Reference mode "${r.mode}" is not supported by this video service.`)
  }
  if (!acceptsDuration(endpoint.duration, r.duration)) {
    return Either.left(`This model takes durations of ${durationWords(endpoint.duration)} seconds.`)
  }
  input[endpoint.duration.field] = r.duration
  if (
    endpoint.aspectRatio !== undefined &&
    (images.length === 0 || r.mode === "images" || endpoint.aspectRatio.withFirstFrame)
  ) {
    input[endpoint.aspectRatio.field] = r.aspectRatio
  }
  if (endpoint.resolution !== undefined) {
    const value = endpoint.resolution.values[job.capability.resolution]
    if (value === undefined) return Either.left(`This model has no ${job.capability.resolution} output.`)
    input[endpoint.resolution.field] = value
  }
  if (endpoint.audio !== undefined) input[endpoint.audio] = r.generateAudio
  else if (endpoint.alwaysSound && !r.generateAudio) {
    return Either.left(`This model's videos always have a soundtrack: set "output.generate_audio" to true.`)
  } else if (!endpoint.alwaysSound && r.generateAudio) {
    return Either.left(`This model makes silent videos: set "output.generate_audio" to false.`)
  }
  if (endpoint.firstFrameRequired && (r.mode === "images" || images.length === 0)) {
    return Either.left(`This model needs a first frame ("input.image").`)
  }
  // The adapter adds no namespace of its own: every namespace a valid request holds is its model's family's.
  for (const [namespace, given] of Object.entries(r.providerOptions)) {
    for (const [name, value] of Object.entries(given ?? {})) {
      const field = endpoint.options[name]
      if (field === undefined) {
        return Either.left(`"provider_options.${namespace}.${name}" is not supported by this model.`)
      }
      input[field] = value
    }
  }
  return Either.right({ ...input, ...endpoint.fixed })
}

const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b))

/** `1536x1024` → `3:2`. */
export const ratioOf = (size: string): string | undefined => {
  const match = /^(\d+)x(\d+)$/.exec(size)
  if (!match) return undefined
  const [w, h] = [Number(match[1]), Number(match[2])]
  const d = gcd(w, h)
  return d === 0 ? undefined : `${w / d}:${h / d}`
}

/** The MIME type of an input image from its first bytes (the service accepted only these three). */
const mimeOf = (bytes: Uint8Array) =>
  bytes[0] === 0x89 && bytes[1] === 0x50
    ? "image/png"
    : bytes[0] === 0xff && bytes[1] === 0xd8
    ? "image/jpeg"
    : "image/webp"

export const imageInput = (job: ImageJob, endpoint: ImageEndpoint): Either.Either<Input, string> => {
  const r = job.request
  if (!endpoint.operations.includes(r.operation)) return Either.left(`This model does not take ${r.operation}s.`)
  if (r.count !== 1) return Either.left(`This model makes one image per task: set "n" to 1.`)
  if (job.inputs.mask !== null) return Either.left("Masks are not supported by this model.")
  if (job.inputs.images.length > endpoint.images.max) {
    return Either.left(`At most ${endpoint.images.max} input images can be sent to this model.`)
  }
  const ratio = ratioOf(r.size)
  if (ratio === undefined || !endpoint.aspectRatio.values.includes(ratio)) {
    return Either.left(`Size ${r.size} is not supported by this model.`)
  }
  const format = endpoint.format.values[r.format]
  if (format === undefined) return Either.left(`Format ${r.format} is not supported by this model.`)
  if (Object.keys(r.providerOptions).length > 0) return Either.left("Provider options are not supported by this model.")
  return Either.right({
    [endpoint.prompt]: r.prompt,
    // Replicate takes files inline as data URIs; the inputs were already fetched and checked.
    ...(job.inputs.images.length > 0
      ? {
        [endpoint.images.field]: job.inputs.images.map((bytes) =>
          `data:${mimeOf(bytes)};base64,${Encoding.encodeBase64(bytes)}`
        )
      }
      : {}),
    [endpoint.aspectRatio.field]: ratio,
    [endpoint.format.field]: format
  })
}
