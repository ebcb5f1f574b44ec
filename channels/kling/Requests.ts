import { HttpClientRequest } from "@effect/platform"
import { Either } from "effect"
import type { VideoJob } from "../../src/channel/contract/Adapter.ts"

/**
 * The unified famK request as a Kling create (docs/adapters/kling.md,
 * Requests), for either API generation. The endpoint follows from the request:
 * an omni model (one whose catalog entry has the `images` mode) always goes to
 * omni-video; a plain model to text-to-video without frames, image-to-video
 * with them.
 *
 * | unified                            | legacy (`model_name` in the body)        | current (model in the path)                     |
 * |------------------------------------|------------------------------------------|-------------------------------------------------|
 * | model                              | `model_name` = `upstream_model`          | `/{endpoint}/{upstream_model}`                  |
 * | input.prompt                       | `prompt` (omni: `@name` → `<<<image_n>>>`) | `{type:"prompt"}` item / `prompt` (text only) |
 * | frame: input.image, ref_images[0]  | `image`, `image_tail` (omni: `image_list` `first_frame`, `end_frame`) | `first_frame`, `last_frame` items |
 * | images: input.image, ref_images    | `image_list[{image_url}]`                | `refer_image` items, `id` = the name            |
 * | the model's resolution             | `mode`: 720p `std`, 1080p `pro`          | `settings.resolution`                           |
 * | output.aspect_ratio                | `aspect_ratio` (not with a first frame)  | `settings.aspect_ratio` (not with a first frame) |
 * | output.duration                    | `duration` as a string                   | `settings.duration` as an integer               |
 * | output.generate_audio              | `sound`: `on` / `off`                    | `settings.audio`: `native` / `off`              |
 * | provider_options.famK              | `negative_prompt`, `cfg_scale` (not omni) | refused: no such fields                        |
 * | the gateway's task id              | `external_task_id`                       | `options.external_task_id`                      |
 * | the channel's callback URL         | `callback_url`                           | `options.callback_url`                          |
 */

export type Api = "legacy" | "current"
export type LegacyKind = "text2video" | "image2video" | "omni-video"
const CURRENT_PATHS: Record<LegacyKind, string> = {
  text2video: "text-to-video",
  image2video: "image-to-video",
  "omni-video": "omni-video"
}

type Reference = VideoJob["request"]["referenceImages"][number]

export interface Create {
  readonly kind: LegacyKind
  readonly path: string
  readonly body: Record<string, unknown>
}

const isOmni = (job: VideoJob) => job.capability.modes["images"] !== undefined

/** The frames (first, then last) or reference images of a request, or why Kling cannot take them. */
const referencesOf = (job: VideoJob): Either.Either<{ frames: Array<Reference>; refs: Array<Reference> }, string> => {
  const r = job.request
  const images = [...(r.image ? [r.image] : []), ...r.referenceImages]
  if (r.referenceVideos.length > 0 || r.referenceAudios.length > 0) {
    return Either.left("Reference videos and audios are not supported by this video service.")
  }
  switch (r.mode) {
    case null:
    case "frame":
      if (images.length > 2) return Either.left("At most two frames can be sent to this video service.")
      return Either.right({ frames: images, refs: [] })
    case "images":
      if (!isOmni(job)) return Either.left(`Reference mode "images" is not supported by this model.`)
      return Either.right({ frames: [], refs: images })
    default:
      return Either.left(`Reference mode "${r.mode}" is not supported by this video service.`)
  }
}

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

/** Legacy omni names images in the prompt as `<<<image_n>>>`: each `@name` of ours becomes its image's tag. */
const legacyPrompt = (prompt: string, refs: ReadonlyArray<Reference>) => {
  const named = refs.map((ref, i) => ({ name: ref.name, tag: `<<<image_${i + 1}>>>` }))
    .filter((n): n is { name: string; tag: string } => typeof n.name === "string" && n.name.length > 0)
    .sort((a, b) => b.name.length - a.name.length)
  return named.reduce(
    (text, { name, tag }) => text.replace(new RegExp(`@${escape(name)}(?![\\w-])`, "g"), tag),
    prompt
  )
}

const famKOptions = (job: VideoJob) => {
  const options = job.request.providerOptions.famK ?? {}
  const negative = options["negative_prompt"]
  const cfg = options["cfg_scale"]
  return {
    ...(typeof negative === "string" ? { negative_prompt: negative } : {}),
    ...(typeof cfg === "number" ? { cfg_scale: cfg } : {})
  }
}

const legacyBody = (job: VideoJob, kind: LegacyKind, frames: Array<Reference>, refs: Array<Reference>) => {
  const r = job.request
  const common = {
    model_name: job.upstreamModel,
    mode: job.capability.resolution === "1080p" ? "pro" : "std",
    duration: String(r.duration),
    sound: r.generateAudio ? "on" : "off",
    external_task_id: job.taskId,
    // Only when the channel takes callbacks (a hint to poll sooner, channels/kling/Callbacks.ts).
    ...(job.callbackUrl !== undefined ? { callback_url: job.callbackUrl } : {})
  }
  switch (kind) {
    case "text2video":
      return { ...common, prompt: r.prompt, aspect_ratio: r.aspectRatio, ...famKOptions(job) }
    case "image2video":
      // The image gives the ratio; Kling fetches a URL itself.
      return {
        ...common,
        prompt: r.prompt,
        image: frames[0]!.url,
        ...(frames[1] ? { image_tail: frames[1].url } : {}),
        ...famKOptions(job)
      }
    case "omni-video": {
      const types = ["first_frame", "end_frame"] as const
      const imageList = frames.length > 0
        ? frames.map((f, i) => ({ image_url: f.url, type: types[i]! }))
        : refs.map((ref) => ({ image_url: ref.url }))
      return {
        ...common,
        prompt: legacyPrompt(r.prompt, refs),
        ...(imageList.length > 0 ? { image_list: imageList } : {}),
        ...(frames.length === 0 ? { aspect_ratio: r.aspectRatio } : {})
      }
    }
  }
}

const currentBody = (job: VideoJob, kind: LegacyKind, frames: Array<Reference>, refs: Array<Reference>) => {
  const r = job.request
  const settings = {
    audio: r.generateAudio ? "native" : "off",
    resolution: job.capability.resolution,
    ...(frames.length === 0 ? { aspect_ratio: r.aspectRatio } : {}),
    duration: r.duration
  }
  const options = {
    external_task_id: job.taskId,
    ...(job.callbackUrl !== undefined ? { callback_url: job.callbackUrl } : {})
  }
  if (kind === "text2video") return { prompt: r.prompt, settings, options }
  const roles = ["first_frame", "last_frame"] as const
  const contents = [
    { type: "prompt", text: r.prompt },
    ...frames.map((f, i) => ({ type: roles[i]!, url: f.url })),
    ...refs.map((ref) => ({ type: "refer_image", url: ref.url, ...(ref.name ? { id: ref.name } : {}) }))
  ]
  return { contents, settings, options }
}

/** The create of a job on this API generation, or the message of a request Kling cannot take (refused unsent). */
export const createOf = (job: VideoJob, api: Api): Either.Either<Create, string> =>
  Either.flatMap(referencesOf(job), ({ frames, refs }) => {
    const kind: LegacyKind = isOmni(job) ? "omni-video" : frames.length > 0 ? "image2video" : "text2video"
    const options = Object.keys(job.request.providerOptions.famK ?? {})
    if (options.length > 0 && (api === "current" || kind === "omni-video")) {
      return Either.left(
        `"provider_options.famK.${options[0]}" is not supported by this video service for this model.`
      )
    }
    return Either.right(
      api === "legacy"
        ? { kind, path: `/v1/videos/${kind}`, body: legacyBody(job, kind, frames, refs) }
        : {
          kind,
          path: `/${CURRENT_PATHS[kind]}/${encodeURIComponent(job.upstreamModel)}`,
          body: currentBody(job, kind, frames, refs)
        }
    )
  })

export const post = (base: string, path: string, token: string, body: Record<string, unknown>) =>
  HttpClientRequest.post(`${base}${path}`).pipe(
    HttpClientRequest.bearerToken(token),
    HttpClientRequest.bodyUnsafeJson(body)
  )

export const get = (base: string, path: string, token: string, urlParams: Record<string, string> = {}) =>
  HttpClientRequest.get(`${base}${path}`, { urlParams }).pipe(HttpClientRequest.bearerToken(token))

/**
 * The legacy poll path depends on the create endpoint, so the id the engine
 * stores carries it: `text2video:867283741759111202`.
 */
export const legacyId = (kind: LegacyKind, taskId: string) => `${kind}:${taskId}`
export const parseLegacyId = (id: string): { kind: LegacyKind; taskId: string } | undefined => {
  const at = id.indexOf(":")
  const kind = id.slice(0, at)
  return at > 0 && kind in CURRENT_PATHS ? { kind: kind as LegacyKind, taskId: id.slice(at + 1) } : undefined
}

/** Ids per batch query (`GET /tasks?task_ids=a,b`); Kling documents no bound, so a query stays short. */
export const MAX_IDS_PER_QUERY = 50
export const batches = (ids: ReadonlyArray<string>) => {
  const out: Array<Array<string>> = []
  for (let i = 0; i < ids.length; i += MAX_IDS_PER_QUERY) out.push(ids.slice(i, i + MAX_IDS_PER_QUERY))
  return out
}
