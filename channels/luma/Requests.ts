import { HttpClientRequest } from "@effect/platform"
import { Either } from "effect"
import { GenerationError, type VideoJob } from "../../src/channel/contract/Adapter.ts"
import { durationOf, MODELS } from "./Models.ts"

/**
 * The unified video request as a Luma generation create
 * (docs/adapters/luma.md, Requests), and the requests of Luma's protocol.
 *
 * | unified                               | Luma create (`POST /generations/video`)            |
 * |---------------------------------------|----------------------------------------------------|
 * | model                                 | `model` = the route's `upstream_model` (`ray-2`)   |
 * | input.prompt                          | `prompt`                                           |
 * | output.duration                       | `duration`, `"5s"` / `"9s"`                        |
 * | output.aspect_ratio                   | `aspect_ratio`                                     |
 * | the model's resolution                | `resolution` (`"720p"`, `"1080p"`)                 |
 * | frame mode: input.image               | `keyframes.frame0: { type: "image", url }`         |
 * | frame mode: reference_images[0]       | `keyframes.frame1: { type: "image", url }`         |
 * | the channel's callback URL            | `callback_url` (with `"callbacks": true`)          |
 *
 * Luma fetches the frames itself from their URLs (it takes no uploads), so
 * this process never downloads a caller-chosen address. What the create has
 * no field for is refused here, before anything is sent; the catalog refuses
 * most of it sooner, at creation, from what the route takes (Models.ts).
 */

type Reference = VideoJob["request"]["referenceImages"][number]

const refuse = (code: string, message: string) =>
  new GenerationError({ code, message, retryable: false, transient: false })

const image = (ref: Reference) => ({ type: "image", url: ref.url })

/** The create's body for a job, or the refusal of what Luma's create cannot carry (nothing is sent). */
export const createBody = (job: VideoJob): Either.Either<Record<string, unknown>, GenerationError> => {
  const r = job.request
  const model = MODELS.get(job.upstreamModel)
  if (model === undefined) {
    return Either.left(refuse("model_unavailable", `${r.model} is not available on this video service.`))
  }
  const media = r.referenceVideos.length + r.referenceAudios.length
  if (r.mode !== null && r.mode !== "frame" && (r.image !== null || r.referenceImages.length > 0 || media > 0)) {
    return Either.left(refuse(
      "unsupported_reference_mode",
      `${r.model} cannot use reference_mode "${r.mode}" at present; only a first and last frame ("frame" mode) can be sent.`
    ))
  }
  if (media > 0) {
    return Either.left(
      refuse("invalid_video_parameter", `${r.model} cannot use reference videos or audios at present.`)
    )
  }
  if (r.referenceImages.length > 1) {
    return Either.left(refuse("invalid_video_parameter", `${r.model} takes at most a first and a last frame.`))
  }
  if (r.referenceImages.length === 1 && !model.lastFrame) {
    return Either.left(refuse("invalid_video_parameter", `${r.model} cannot use a last frame at present.`))
  }
  if (r.generateAudio) {
    return Either.left(refuse(
      "invalid_video_parameter",
      `"output.generate_audio" must be false for ${r.model}: it makes silent videos only.`
    ))
  }
  const namespaces = Object.keys(r.providerOptions).filter((ns) => Object.keys(r.providerOptions[ns]!).length > 0)
  if (namespaces.length > 0) {
    return Either.left(
      refuse("invalid_provider_options", `${r.model} cannot honour "provider_options.${namespaces[0]}" at present.`)
    )
  }
  if (!model.durations.includes(r.duration) || !model.aspectRatios.includes(r.aspectRatio)) {
    return Either.left(refuse(
      "invalid_video_parameter",
      `${r.model} cannot make ${r.duration} s at ${r.aspectRatio} at present.`
    ))
  }
  const last = r.referenceImages[0]
  const keyframes = {
    ...(r.image !== null ? { frame0: image(r.image) } : {}),
    ...(last !== undefined ? { frame1: image(last) } : {})
  }
  return Either.right({
    model: job.upstreamModel,
    prompt: r.prompt,
    aspect_ratio: r.aspectRatio,
    resolution: job.capability.resolution,
    duration: durationOf(r.duration),
    ...(Object.keys(keyframes).length > 0 ? { keyframes } : {}),
    ...(job.callbackUrl !== undefined ? { callback_url: job.callbackUrl } : {})
  })
}

/**
 * Luma's ids are UUIDs; anything else is never put in a path (a poll of a
 * stored id that is not one reads as Unknown, never a request elsewhere).
 */
const ID = /^[0-9a-fA-F-]{8,64}$/
export const isGenerationId = (id: string) => ID.test(id)

/** `base_url` (trailing slashes already dropped, HttpUrl) ends with the API version (`…/dream-machine/v1`); paths follow it. */
export const endpoints = (base: string, apiKey: string) => {
  const authed = HttpClientRequest.bearerToken(apiKey)
  const generation = (id: string) => `${base}/generations/${encodeURIComponent(id)}`
  return {
    /** The video create, where Luma's API reference and official client send it. */
    create: (body: Record<string, unknown>) =>
      HttpClientRequest.post(`${base}/generations/video`).pipe(
        authed,
        HttpClientRequest.acceptJson,
        HttpClientRequest.bodyUnsafeJson(body)
      ),
    get: (id: string) => HttpClientRequest.get(generation(id)).pipe(authed, HttpClientRequest.acceptJson),
    remove: (id: string) => HttpClientRequest.del(generation(id)).pipe(authed, HttpClientRequest.acceptJson),
    /** One page of the account's generations, `limit` from `offset` (reconciliation). */
    list: (limit: number, offset: number) =>
      HttpClientRequest.get(`${base}/generations`, {
        urlParams: { limit: String(limit), offset: String(offset) }
      }).pipe(authed, HttpClientRequest.acceptJson),
    /** The account's credit balance: free, changes nothing, needs the key (the check). */
    credits: () => HttpClientRequest.get(`${base}/credits`).pipe(authed, HttpClientRequest.acceptJson)
  }
}
