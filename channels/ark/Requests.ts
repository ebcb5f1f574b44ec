import { HttpClientRequest } from "@effect/platform"
import { Either } from "effect"
import type { VideoJob } from "../../src/channel/contract/Adapter.ts"

/**
 * The unified famS request as an Ark content-generation task
 * (docs/adapters/ark.md, Requests). Ark reads parameters from body fields,
 * never from text commands in the prompt, and fetches reference media by URL
 * itself.
 *
 * | unified                                  | Ark                                                    |
 * |------------------------------------------|--------------------------------------------------------|
 * | model                                    | `model` = the route's `upstream_model`                 |
 * | input.prompt                             | `content[]` `{type:"text"}` (first item)               |
 * | frame: input.image, reference_images[0]  | `image_url` with role `first_frame`, then `last_frame` |
 * | media: input.image, reference_images     | `image_url` with role `reference_image`                |
 * | media: reference_videos                  | `video_url` with role `reference_video`                |
 * | media: reference_audios                  | `audio_url` with role `reference_audio`                |
 * | the model's resolution                   | `resolution`                                           |
 * | output.aspect_ratio                      | `ratio`                                                |
 * | output.duration                          | `duration`                                             |
 * | output.generate_audio                    | `generate_audio`                                       |
 * | provider_options.famS.seed, camera_fixed | `seed`, `camera_fixed`                                 |
 * | the channel's `timeouts.deadline_s`      | `execution_expires_after` (clamped to 3600..259200)    |
 * | the channel's callback URL (`callbacks`) | `callback_url`                                         |
 */

type Reference = VideoJob["request"]["referenceImages"][number]

type Content =
  | { readonly type: "text"; readonly text: string }
  | { readonly type: "image_url"; readonly image_url: { readonly url: string }; readonly role: string }
  | { readonly type: "video_url"; readonly video_url: { readonly url: string }; readonly role: "reference_video" }
  | { readonly type: "audio_url"; readonly audio_url: { readonly url: string }; readonly role: "reference_audio" }

const image = (ref: Reference, role: "first_frame" | "last_frame" | "reference_image"): Content => ({
  type: "image_url",
  image_url: { url: ref.url },
  role
})

/** Ark's bounds of `execution_expires_after`; outside them it answers 400 InvalidParameter. */
const EXPIRES_MIN_S = 3600
const EXPIRES_MAX_S = 259_200

/**
 * The content items of a request, or why Ark cannot take it. Reference
 * `name`s have no Ark field: they are not sent, and a `@name` in the prompt
 * stays as the caller wrote it.
 */
const contentOf = (job: VideoJob): Either.Either<ReadonlyArray<Content>, string> => {
  const r = job.request
  const text: Content = { type: "text", text: r.prompt }
  // The spec's order: input.image first, then reference_images.
  const images = [...(r.image ? [r.image] : []), ...r.referenceImages]
  switch (r.mode) {
    case null:
      return Either.right([text])
    case "frame": {
      // One image is the first frame; a second is the last (Ark has no last frame without a first).
      const roles = ["first_frame", "last_frame"] as const
      if (images.length > roles.length) return Either.left("At most two frames can be sent to this video service.")
      return Either.right([text, ...images.map((ref, i) => image(ref, roles[i]!))])
    }
    case "media":
      return Either.right([
        text,
        ...images.map((ref) => image(ref, "reference_image")),
        ...r.referenceVideos.map((ref): Content => ({
          type: "video_url",
          video_url: { url: ref.url },
          role: "reference_video"
        })),
        ...r.referenceAudios.map((ref): Content => ({
          type: "audio_url",
          audio_url: { url: ref.url },
          role: "reference_audio"
        }))
      ])
    default:
      return Either.left(`Reference mode "${r.mode}" is not supported by this video service.`)
  }
}

const famSOption = <T>(job: VideoJob, key: string, is: (v: unknown) => v is T): T | undefined => {
  const value = job.request.providerOptions.famS?.[key]
  return is(value) ? value : undefined
}
const isInt = (v: unknown): v is number => typeof v === "number" && Number.isInteger(v)
const isBool = (v: unknown): v is boolean => typeof v === "boolean"

/** The create body, or the message of a request Ark cannot take as it is (refused before anything is sent). */
export const createBody = (job: VideoJob, deadlineS: number): Either.Either<Record<string, unknown>, string> =>
  Either.flatMap(contentOf(job), (content) => {
    const seed = famSOption(job, "seed", isInt)
    const cameraFixed = famSOption(job, "camera_fixed", isBool)
    // Ark does not accept camera_fixed with reference media (docs/adapters/ark.md, Requests); refusing here saves a
    // round trip and says why.
    if (cameraFixed !== undefined && job.request.mode === "media") {
      return Either.left(`"provider_options.famS.camera_fixed" cannot be combined with reference media.`)
    }
    return Either.right({
      model: job.upstreamModel,
      content,
      resolution: job.capability.resolution,
      ratio: job.request.aspectRatio,
      duration: job.request.duration,
      generate_audio: job.request.generateAudio,
      // Ark gives up when we do, so a task we failed and refunded cannot finish (and be billed) later.
      execution_expires_after: Math.min(Math.max(deadlineS, EXPIRES_MIN_S), EXPIRES_MAX_S),
      ...(seed !== undefined ? { seed } : {}),
      ...(cameraFixed !== undefined ? { camera_fixed: cameraFixed } : {}),
      // Only when the channel takes callbacks: Ark then posts the task object on each status change.
      ...(job.callbackUrl !== undefined ? { callback_url: job.callbackUrl } : {})
    })
  })

export const createRequest = (base: string, apiKey: string, body: Record<string, unknown>) =>
  HttpClientRequest.post(`${base}/contents/generations/tasks`).pipe(
    HttpClientRequest.bearerToken(apiKey),
    HttpClientRequest.bodyUnsafeJson(body)
  )

/** The list endpoint's page bound (docs/adapters/ark.md, States and polling): one page holds every task of a batch. */
export const MAX_IDS_PER_LIST = 500
/**
 * The ids travel in the query string, one `filter.task_ids` each; common
 * proxies refuse request lines past 8 KiB, so a batch also stops there.
 * With Ark's ids (`cgt-` + 20 characters) that is about 160 ids per call,
 * more than the engine's 100 per poll, so each engine batch is one call.
 */
const MAX_QUERY_CHARS = 7000

/**
 * The ids one list call is sure to carry, whatever Ark's ids look like
 * within the query's bound: the batch the engine counts as one request
 * (`pollBatch`). A poll of more ids is several list calls.
 */
export const IDS_PER_LIST_CALL = 100

/** Ids in batches as large as one list call can carry. */
export const listBatches = (ids: ReadonlyArray<string>): ReadonlyArray<ReadonlyArray<string>> => {
  const batches: Array<Array<string>> = []
  let current: Array<string> = []
  let chars = 0
  for (const id of ids) {
    const cost = "&filter.task_ids=".length + encodeURIComponent(id).length
    if (current.length > 0 && (current.length === MAX_IDS_PER_LIST || chars + cost > MAX_QUERY_CHARS)) {
      batches.push(current)
      current = []
      chars = 0
    }
    current.push(id)
    chars += cost
  }
  if (current.length > 0) batches.push(current)
  return batches
}

/** `GET {base}/contents/generations/tasks` with the ids repeated as `filter.task_ids`, all on one page. */
export const listRequest = (base: string, apiKey: string, ids: ReadonlyArray<string>) =>
  HttpClientRequest.get(`${base}/contents/generations/tasks`, {
    urlParams: [
      ["page_num", "1"],
      ["page_size", String(ids.length)],
      ...ids.map((id) => ["filter.task_ids", id] as const)
    ]
  }).pipe(HttpClientRequest.bearerToken(apiKey))

/** Ark's cancel: `DELETE` of a queued task cancels it (of a finished one, deletes its record: see index.ts). */
export const deleteRequest = (base: string, apiKey: string, id: string) =>
  HttpClientRequest.del(`${base}/contents/generations/tasks/${encodeURIComponent(id)}`).pipe(
    HttpClientRequest.bearerToken(apiKey)
  )

/** Tasks per page of the account's list (Ark's largest page). */
export const LIST_PAGE_SIZE = 500

/**
 * `GET {base}/contents/generations/tasks` of one model, one page: the account's
 * tasks of the last 7 days (Ark keeps no older ones), for reconciliation.
 */
export const modelListRequest = (base: string, apiKey: string, model: string, page: number) =>
  HttpClientRequest.get(`${base}/contents/generations/tasks`, {
    urlParams: [["page_num", String(page)], ["page_size", String(LIST_PAGE_SIZE)], ["filter.model", model]]
  }).pipe(HttpClientRequest.bearerToken(apiKey))
