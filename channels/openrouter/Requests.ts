import { HttpClientRequest } from "@effect/platform"
import { Either } from "effect"
import type { VideoJob } from "../../src/channel/contract/Adapter.ts"
import type { VideoModel } from "./Models.ts"

/**
 * The unified video request as OpenRouter's create (`POST /videos`,
 * `VideoGenerationRequest` of the official client; docs/adapters/openrouter.md,
 * Requests), and the other requests of the protocol.
 *
 * | unified                                   | OpenRouter                                                   |
 * |-------------------------------------------|--------------------------------------------------------------|
 * | model (public id)                         | `model` = the route's `upstream_model`                       |
 * | input.prompt                              | `prompt`                                                     |
 * | output.duration                           | `duration` (integer seconds)                                 |
 * | output.aspect_ratio                       | `aspect_ratio`                                               |
 * | the public model's resolution             | `resolution` (Veo); Kling's model id fixes it                |
 * | output.generate_audio                     | `generate_audio`                                             |
 * | frame: input.image, reference_images[0]   | `frame_images[]`, `frame_type` `first_frame`, `last_frame`   |
 * | images: input.image, reference_images     | `input_references[]` (`type: image_url`)                     |
 * | provider_options.famV.seed                | `seed`                                                       |
 *
 * Images go as URLs (`image_url.url`): OpenRouter fetches them itself, so
 * this process never downloads a caller's address through the upstream
 * client. What the create has no field for is refused before anything is
 * sent, with a message for the caller (the route's limits refuse most of it
 * at creation already).
 */

type Body = Record<string, unknown>

const imageUrl = (url: string) => ({ type: "image_url", image_url: { url } })

export const createBody = (job: VideoJob, model: VideoModel): Either.Either<Body, string> => {
  const r = job.request
  if (r.referenceVideos.length > 0 || r.referenceAudios.length > 0 || r.mode === "media") {
    return Either.left("Reference videos and audios are not supported by this video service.")
  }
  const images = [...(r.image ? [r.image] : []), ...r.referenceImages]
  const body: Body = { model: job.upstreamModel, prompt: r.prompt }
  if (r.mode === "images") {
    if (model.referenceImages === undefined) {
      return Either.left(`Reference mode "images" is not supported by this model.`)
    }
    if (images.length > model.referenceImages) {
      return Either.left(`At most ${model.referenceImages} reference images can be sent to this model.`)
    }
    body.input_references = images.map((ref) => imageUrl(ref.url))
  } else if (r.mode === null || r.mode === "frame") {
    const most = model.lastFrame ? 2 : 1
    if (images.length > most) return Either.left(`At most ${most} frames can be sent to this model.`)
    if (images.length > 0) {
      body.frame_images = images.map((ref, i) => ({
        ...imageUrl(ref.url),
        frame_type: i === 0 ? "first_frame" : "last_frame"
      }))
    }
  } else {
    return Either.left(`Reference mode "${r.mode}" is not supported by this video service.`)
  }
  if (!model.durations.includes(r.duration)) {
    return Either.left(`This model takes durations of ${model.durations.join(", ")} seconds.`)
  }
  body.duration = r.duration
  if (!model.aspectRatios.includes(r.aspectRatio)) {
    return Either.left(`This model takes aspect ratios ${model.aspectRatios.join(", ")}.`)
  }
  body.aspect_ratio = r.aspectRatio
  if (!model.resolutions.includes(job.capability.resolution)) {
    return Either.left(`This model has no ${job.capability.resolution} output.`)
  }
  if (model.sendsResolution) body.resolution = job.capability.resolution
  if (model.audio) body.generate_audio = r.generateAudio
  else if (r.generateAudio) return Either.left(`This model makes silent videos: set "output.generate_audio" to false.`)
  for (const [family, options] of Object.entries(r.providerOptions)) {
    for (const [name, value] of Object.entries(options)) {
      // The one option with a field of OpenRouter's own; the rest would need a provider's passthrough slug.
      if (family === "famV" && name === "seed" && model.seed) body.seed = value
      else return Either.left(`"provider_options.${family}.${name}" is not supported by this video service.`)
    }
  }
  return Either.right(body)
}

/** The attribution headers OpenRouter reads (its app attribution), when the channel sets them. */
export interface Attribution {
  readonly referer?: string | undefined
  readonly title?: string | undefined
}

/** `base_url` ends with the API version (`https://openrouter.ai/api/v1`); paths follow it as the official client's do. */
export const endpoints = (base: string, apiKey: string, attribution: Attribution) => {
  const signed = (request: HttpClientRequest.HttpClientRequest) =>
    request.pipe(
      HttpClientRequest.bearerToken(apiKey),
      attribution.referer === undefined ? (r) => r : HttpClientRequest.setHeader("HTTP-Referer", attribution.referer),
      // The official client sends `X-OpenRouter-Title`; the app attribution page names `X-Title`: both, same value.
      attribution.title === undefined ? (r) => r : HttpClientRequest.setHeaders({
        "X-OpenRouter-Title": attribution.title,
        "X-Title": attribution.title
      })
    )
  const job = (id: string) => `${base}/videos/${encodeURIComponent(id)}`
  return {
    /** `POST /videos` (videoGeneration.generate). */
    create: (body: Body) =>
      signed(HttpClientRequest.post(`${base}/videos`)).pipe(
        HttpClientRequest.acceptJson,
        HttpClientRequest.bodyUnsafeJson(body)
      ),
    /** `GET /videos/{jobId}` (videoGeneration.getGeneration). */
    get: (id: string) => signed(HttpClientRequest.get(job(id))).pipe(HttpClientRequest.acceptJson),
    /** `GET /videos/{jobId}/content?index=N` (videoGeneration.getVideoContent): the bytes, with the key. */
    contentUrl: (id: string, index = 0) => `${job(id)}/content?index=${index}`,
    content: (url: string) => signed(HttpClientRequest.get(url)).pipe(HttpClientRequest.accept("video/mp4")),
    /** `GET /key` (apiKeys.getCurrentKeyMetadata): free, changes nothing, needs a valid key. */
    key: () => signed(HttpClientRequest.get(`${base}/key`)).pipe(HttpClientRequest.acceptJson)
  }
}
