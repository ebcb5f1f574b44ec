import { HttpClientRequest } from "@effect/platform"
import { Either } from "effect"
import type { VideoJob } from "../../src/channel/contract/Adapter.ts"
import { DURATIONS, MODELS, RESOLUTIONS } from "./Models.ts"

/**
 * The unified famH request as a MiniMax `POST /v1/video_generation`
 * (docs/adapters/minimax.md, Requests). One endpoint takes text-to-video,
 * image-to-video and first-and-last-frame: which it is follows from the
 * frames sent.
 *
 * | unified                               | MiniMax                                      |
 * |---------------------------------------|----------------------------------------------|
 * | model (public id)                     | `model` = the route's `upstream_model`       |
 * | input.prompt                          | `prompt`                                     |
 * | frame: input.image                    | `first_frame_image` (a URL MiniMax fetches)  |
 * | frame: input.reference_images[0]      | `last_frame_image` (MiniMax-Hailuo-02 only)  |
 * | output.duration                       | `duration` (6 or 10; 10 at 768P only)        |
 * | the model's resolution                | `resolution`: 720p → `768P`, 1080p → `1080P` |
 * | provider_options.famH.prompt_optimizer | `prompt_optimizer`                          |
 * | provider_options.famH.fast_pretreatment | `fast_pretreatment`                        |
 * | the channel's callback URL (`callbacks`) | `callback_url` (Callbacks.ts)                |
 *
 * What MiniMax cannot take is refused here, before anything is sent.
 */

type Reference = VideoJob["request"]["referenceImages"][number]

const refusal = (message: string) => Either.left(message)

/** The frames (first, then last) of a request, or why MiniMax cannot take them. */
const framesOf = (job: VideoJob): Either.Either<ReadonlyArray<Reference>, string> => {
  const r = job.request
  if (r.referenceVideos.length > 0 || r.referenceAudios.length > 0) {
    return refusal("Reference videos and audios are not supported by this video service.")
  }
  if (r.mode !== null && r.mode !== "frame") {
    return refusal(`Reference mode "${r.mode}" is not supported by this video service.`)
  }
  const frames = [...(r.image ? [r.image] : []), ...r.referenceImages]
  if (frames.length > 2) return refusal("At most a first and a last frame can be sent to this video service.")
  if (frames.length === 2 && MODELS.get(job.upstreamModel)?.lastFrame !== true) {
    return refusal("A last frame is not supported by this model.")
  }
  return Either.right(frames)
}

/** `provider_options.famH`'s booleans, as MiniMax names them. */
const famHOptions = (job: VideoJob) => {
  const options = job.request.providerOptions.famH ?? {}
  const out: Record<string, boolean> = {}
  for (const name of ["prompt_optimizer", "fast_pretreatment"]) {
    if (typeof options[name] === "boolean") out[name] = options[name]
  }
  return out
}

/** The create body of a job, or the message of a request MiniMax cannot take (refused unsent). */
export const createBody = (job: VideoJob): Either.Either<Record<string, unknown>, string> =>
  Either.flatMap(framesOf(job), (frames) => {
    const r = job.request
    const resolution = RESOLUTIONS[job.capability.resolution]
    if (resolution === undefined) {
      return refusal(`${job.capability.resolution} videos are not supported by this video service.`)
    }
    if (!DURATIONS[resolution]!.includes(r.duration)) {
      return refusal(`${r.duration} s videos at ${job.capability.resolution} are not supported by this video service.`)
    }
    if (r.generateAudio) return refusal("Videos with a soundtrack are not supported by this video service.")
    const unknown = Object.keys(r.providerOptions).find((ns) =>
      ns !== "famH" && Object.keys(r.providerOptions[ns]!).length > 0
    )
    if (unknown !== undefined) return refusal(`"provider_options.${unknown}" is not supported by this video service.`)
    return Either.right({
      model: job.upstreamModel,
      prompt: r.prompt,
      duration: r.duration,
      resolution,
      ...(frames[0] !== undefined ? { first_frame_image: frames[0].url } : {}),
      ...(frames[1] !== undefined ? { last_frame_image: frames[1].url } : {}),
      ...famHOptions(job),
      // MiniMax verifies it with a challenge, then posts status updates there (Callbacks.ts).
      ...(job.callbackUrl !== undefined ? { callback_url: job.callbackUrl } : {})
    })
  })

/** MiniMax's paths under the channel's `base_url` (`https://api.minimax.io`, or `https://api.minimaxi.com`). */
export const endpoints = (base: string, apiKey: string) => ({
  create: (body: Record<string, unknown>) =>
    HttpClientRequest.post(`${base}/v1/video_generation`).pipe(
      HttpClientRequest.bearerToken(apiKey),
      HttpClientRequest.bodyUnsafeJson(body)
    ),
  query: (taskId: string) =>
    HttpClientRequest.get(`${base}/v1/query/video_generation`, { urlParams: { task_id: taskId } }).pipe(
      HttpClientRequest.bearerToken(apiKey)
    ),
  /** Where a finished video's file is described (its `download_url`); what a ResultRef holds. */
  retrieveUrl: (fileId: string) => `${base}/v1/files/retrieve?file_id=${encodeURIComponent(fileId)}`,
  retrieve: (url: string) => HttpClientRequest.get(url).pipe(HttpClientRequest.bearerToken(apiKey)),
  /** A free list that needs the key (the channel check): the files of one documented purpose. */
  list: () =>
    HttpClientRequest.get(`${base}/v1/files/list`, { urlParams: { purpose: "t2a_async_input" } }).pipe(
      HttpClientRequest.bearerToken(apiKey)
    )
})
