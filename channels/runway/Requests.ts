import { HttpClientRequest } from "@effect/platform"
import { Effect, Encoding } from "effect"
import type { GenerationError, VideoJob } from "../../src/channel/contract/Adapter.ts"
import { unsupported } from "./Failures.ts"
import { RATIOS, type RunwayModel } from "./Models.ts"

/**
 * The unified video request as a Runway create (docs/adapters/runway.md,
 * Requests), driven by the route's model entry (Models.ts).
 *
 * | unified                                 | Runway                                                       |
 * |-----------------------------------------|--------------------------------------------------------------|
 * | model                                   | `model` = the route's `upstream_model`                        |
 * | no image                                | `POST /v1/text_to_video`                                      |
 * | frame: input.image (+ reference_images[0]) | `POST /v1/image_to_video`, `promptImage`: the URI, or `[{uri, position: "first"}, {uri, position: "last"}]` |
 * | input.prompt                            | `promptText`                                                  |
 * | output.aspect_ratio + the resolution    | `ratio` in pixels (16:9 at 720p → `1280:720`)                 |
 * | output.duration                         | `duration`, integer seconds                                   |
 * | output.generate_audio                   | `audio` (Veo 3.1 models); the others make silent videos      |
 * | provider_options.<family>.seed          | `seed`                                                        |
 * | provider_options.famV.negative_prompt   | `negativePrompt` (Veo 3.1 models)                             |
 *
 * Runway takes an image as an HTTPS URL (fetched by Runway) or a base64
 * data URI of at most 5 MB: an HTTPS URL goes as it is; any other (an
 * `http:` address) is read through the engine's guarded fetcher
 * (`job.readImage`) and sent inline.
 */

/** The API version this adapter speaks: the one `@runwayml/sdk` 4.20.1 sends (`X-Runway-Version`). */
export const RUNWAY_VERSION = "2024-11-06"

/** Runway's bound on a data URI. */
const MAX_DATA_URI = 5 * 1024 * 1024

/** The image types Runway documents for inputs, from their first bytes. */
const mimeOf = (b: Uint8Array): string | undefined =>
  b[0] === 0x89 && b[1] === 0x50 && b[2] === 0x4e && b[3] === 0x47
    ? "image/png"
    : b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff
    ? "image/jpeg"
    : b[0] === 0x52 && b[1] === 0x49 && b[2] === 0x46 && b[3] === 0x46 && b[8] === 0x57 && b[9] === 0x45
    ? "image/webp"
    : undefined

const uriOf = (job: VideoJob, url: string, where: string): Effect.Effect<string, GenerationError> =>
  url.startsWith("https://") ? Effect.succeed(url) : Effect.gen(function*() {
    const bytes = yield* job.readImage(url, where)
    const mime = mimeOf(bytes)
    if (mime === undefined) return yield* unsupported(`${where} is not a PNG, JPEG or WebP image.`)
    const uri = `data:${mime};base64,${Encoding.encodeBase64(bytes)}`
    if (uri.length > MAX_DATA_URI) return yield* unsupported(`${where} is too large for this video service (5 MB).`)
    return uri
  })

export interface Create {
  readonly path: "/v1/text_to_video" | "/v1/image_to_video"
  readonly body: Record<string, unknown>
}

/** The create of a job on its model, or the refusal (final, nothing sent) of what the model cannot take. */
export const createOf = (job: VideoJob, model: RunwayModel): Effect.Effect<Create, GenerationError> =>
  Effect.gen(function*() {
    const r = job.request
    if (r.referenceVideos.length > 0 || r.referenceAudios.length > 0) {
      return yield* unsupported("Reference videos and audios are not supported by this video service.")
    }
    if (r.mode !== null && r.mode !== "frame") {
      return yield* unsupported(`Reference mode "${r.mode}" is not supported by this video service.`)
    }
    const frames = [
      ...(r.image ? [{ url: r.image.url, where: "input.image" }] : []),
      ...r.referenceImages.map((ref, i) => ({ url: ref.url, where: `input.reference_images[${i}]` }))
    ]
    if (frames.length > (model.imageToVideo.lastFrame ? 2 : 1)) {
      return yield* unsupported(
        `At most ${model.imageToVideo.lastFrame ? "two frames" : "a first frame"} can be sent to this model.`
      )
    }
    const endpoint = frames.length === 0 ? model.textToVideo : model.imageToVideo
    if (endpoint === undefined) {
      return yield* unsupported(`This model needs a first frame ("input.image").`)
    }
    const ratio = RATIOS[job.capability.resolution]?.[r.aspectRatio]
    if (ratio === undefined || !endpoint.ratios.includes(ratio)) {
      return yield* unsupported(`Aspect ratio ${r.aspectRatio} is not supported by this model for this request.`)
    }
    if (!model.durations.includes(r.duration)) {
      return yield* unsupported(`This model takes durations of ${model.durations.join(", ")} seconds.`)
    }
    if (model.audio === "never" && r.generateAudio) {
      return yield* unsupported(`This model makes silent videos: set "output.generate_audio" to false.`)
    }
    const options: Record<string, unknown> = {}
    for (const [namespace, values] of Object.entries(r.providerOptions)) {
      for (const [name, value] of Object.entries(values)) {
        const field = model.options[name]
        if (field === undefined) {
          return yield* unsupported(`"provider_options.${namespace}.${name}" is not supported by this model.`)
        }
        options[field] = value
      }
    }
    const uris = yield* Effect.forEach(frames, (f) => uriOf(job, f.url, f.where))
    const promptImage = uris.length === 0
      ? {}
      : uris.length === 1
      ? { promptImage: uris[0] }
      : { promptImage: [{ uri: uris[0], position: "first" }, { uri: uris[1], position: "last" }] }
    return {
      path: frames.length === 0 ? "/v1/text_to_video" : "/v1/image_to_video",
      body: {
        model: job.upstreamModel,
        promptText: r.prompt,
        ...promptImage,
        ratio,
        duration: r.duration,
        ...(model.audio === "switch" ? { audio: r.generateAudio } : {}),
        ...options
      }
    } satisfies Create
  })

/** Every request carries the key and the API version; Runway refuses one without `X-Runway-Version`. */
const signed = (request: HttpClientRequest.HttpClientRequest, key: string) =>
  request.pipe(
    HttpClientRequest.bearerToken(key),
    HttpClientRequest.setHeader("X-Runway-Version", RUNWAY_VERSION)
  )

/** `base_url` is the API's origin (`https://api.dev.runwayml.com`); every path starts with `/v1`. */
export const endpoints = (base: string, key: string) => ({
  create: (create: Create) =>
    signed(HttpClientRequest.post(`${base}${create.path}`), key).pipe(HttpClientRequest.bodyUnsafeJson(create.body)),
  task: (id: string) => signed(HttpClientRequest.get(`${base}/v1/tasks/${encodeURIComponent(id)}`), key),
  /** Cancels a pending, throttled or running task; deletes any other (its outputs with it). */
  remove: (id: string) =>
    signed(HttpClientRequest.del(`${base}/v1/tasks/${encodeURIComponent(id)}`), key).pipe(
      HttpClientRequest.accept("*/*")
    ),
  organization: () => signed(HttpClientRequest.get(`${base}/v1/organization`), key)
})
