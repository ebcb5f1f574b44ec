import { HttpClientRequest } from "@effect/platform"
import { Either } from "effect"
import type { VideoJob } from "../../src/channel/contract/Adapter.ts"
import { lineOf, type Resolution, SIZES, tierOf } from "./Models.ts"

/**
 * The unified famW request as a DashScope video-synthesis create
 * (docs/adapters/alibaba.md, Requests). One route serves a text-only and a
 * first-frame request: the line of the route's `upstream_model` (Models.ts)
 * gives the text-to-video or the image-to-video model.
 *
 * | unified                          | text-to-video                          | image-to-video (first frame)            |
 * |----------------------------------|----------------------------------------|-----------------------------------------|
 * | model                            | `model` = the line's t2v model         | `model` = the line's i2v model          |
 * | input.prompt                     | `input.prompt`                         | `input.prompt`                          |
 * | input.image                      | none                                   | `input.img_url` (DashScope fetches it)  |
 * | output.aspect_ratio + resolution | `parameters.size` (`1280*720`)         | `parameters.resolution` (`720P`); the image gives the ratio |
 * | output.duration                  | `parameters.duration`                  | `parameters.duration`                   |
 * | output.generate_audio            | `parameters.audio` (wan2.5, wan2.6)    | `parameters.audio` (wan2.5, wan2.6)     |
 * | provider_options.famW            | `input.negative_prompt`, `parameters.seed`, `parameters.prompt_extend` | the same |
 * | the channel's `watermark`        | `parameters.watermark`                 | `parameters.watermark`                  |
 *
 * The create carries `X-DashScope-Async: enable`, without which DashScope
 * refuses it (video synthesis is asynchronous only).
 */

export const CREATE_PATH = "/api/v1/services/aigc/video-generation/video-synthesis"
export const TASKS_PATH = "/api/v1/tasks"

export interface Create {
  readonly model: string
  readonly body: Record<string, unknown>
}

const famWOptions = (job: VideoJob) => {
  const options = job.request.providerOptions.famW ?? {}
  const negative = options["negative_prompt"]
  const seed = options["seed"]
  const extend = options["prompt_extend"]
  return {
    input: typeof negative === "string" ? { negative_prompt: negative } : {},
    parameters: {
      ...(typeof seed === "number" ? { seed } : {}),
      ...(typeof extend === "boolean" ? { prompt_extend: extend } : {})
    }
  }
}

/** The create of a job, or the message of a request DashScope cannot take (refused unsent). */
export const createOf = (job: VideoJob, watermark: boolean | undefined): Either.Either<Create, string> => {
  const r = job.request
  const line = lineOf(job.upstreamModel)
  // checkRoute refused such routes at start; this guards a configuration it did not see.
  if (line === undefined) return Either.left("This model is not available on this video service.")
  if (r.referenceImages.length > 0) {
    return Either.left("A last frame (input.reference_images) is not supported by this video service.")
  }
  if (r.referenceVideos.length > 0 || r.referenceAudios.length > 0) {
    return Either.left("Reference videos and audios are not supported by this video service.")
  }
  if (r.mode !== null && r.mode !== "frame") {
    return Either.left(`Reference mode "${r.mode}" is not supported by this video service.`)
  }
  const resolution = job.capability.resolution as Resolution
  const size = SIZES[resolution]?.[r.aspectRatio]
  if (r.image === null && size === undefined) {
    return Either.left(`Aspect ratio ${r.aspectRatio} is not supported at ${resolution} by this video service.`)
  }
  const options = famWOptions(job)
  const parameters = {
    ...(r.image === null ? { size } : { resolution: tierOf(resolution) }),
    duration: r.duration,
    ...options.parameters,
    // wan2.5 and wan2.6 make a soundtrack unless told not to; the silent lines have no such field.
    ...(line.audio === "switch" ? { audio: r.generateAudio } : {}),
    ...(watermark === undefined ? {} : { watermark })
  }
  const model = r.image === null ? line.t2v : line.i2v
  const input = {
    prompt: r.prompt,
    ...options.input,
    ...(r.image === null ? {} : { img_url: r.image.url })
  }
  return Either.right({ model, body: { model, input, parameters } })
}

const authorised = (request: HttpClientRequest.HttpClientRequest, apiKey: string) =>
  request.pipe(HttpClientRequest.bearerToken(apiKey), HttpClientRequest.acceptJson)

export const endpoints = (base: string, apiKey: string) => ({
  create: (body: Record<string, unknown>) =>
    authorised(HttpClientRequest.post(`${base}${CREATE_PATH}`), apiKey).pipe(
      HttpClientRequest.setHeader("X-DashScope-Async", "enable"),
      HttpClientRequest.bodyUnsafeJson(body)
    ),
  task: (id: string) => authorised(HttpClientRequest.get(`${base}${TASKS_PATH}/${encodeURIComponent(id)}`), apiKey),
  cancel: (id: string) =>
    authorised(HttpClientRequest.post(`${base}${TASKS_PATH}/${encodeURIComponent(id)}/cancel`), apiKey),
  /** The account's task list, newest page of one: the channel check (free, changes nothing, needs the key). */
  list: () =>
    authorised(HttpClientRequest.get(`${base}${TASKS_PATH}`, { urlParams: { page_no: "1", page_size: "1" } }), apiKey)
})
