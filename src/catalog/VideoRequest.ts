import { Effect, Either } from "effect"
import { ModelUnavailable } from "../channel/Errors.ts"
import type { AspectRatio, ModeCapability, ReferenceMode, VideoModelCapability } from "./contract/Capabilities.ts"
import type { Reference, ValidVideoRequest } from "./contract/Requests.ts"
import type { ValidationError } from "./Errors.ts"
import type { ServedVideoModel } from "./Registry.ts"
import {
  checkDeclaredOptions,
  checkFields,
  fail,
  invalid,
  isHttpUrl,
  isObject,
  own,
  runChecks
} from "./RequestChecks.ts"
import { ReferenceSource, VideoCreateRequest, VideoInput, VideoOutput } from "./VideoCreateRequest.ts"

/**
 * Validation of `POST /v1/video/tasks`, derived from a model's capability
 * table. Every rule answers the exact code of the spec's Errors table; the
 * checks run in the order the spec implies (model and options before
 * anything that could charge or replay).
 */

export const MAX_PROMPT_CHARS = 1200
export const MAX_CLIENT_REFERENCE_ID = 191

const fieldsOf = (schema: { readonly fields: Record<string, unknown> }) => new Set(Object.keys(schema.fields))
const TOP_FIELDS = fieldsOf(VideoCreateRequest)
const INPUT_FIELDS = fieldsOf(VideoInput)
const OUTPUT_FIELDS = fieldsOf(VideoOutput)
const REFERENCE_FIELDS = fieldsOf(ReferenceSource)
const UNSUPPORTED_OPERATIONS = new Set(["edit", "extension", "remix"])
/** Fields a provider option may never override: they are unified request fields. */
const PROTECTED_OPTIONS = new Set([
  "model",
  "prompt",
  "duration",
  "aspect_ratio",
  "resolution",
  "image",
  "reference_images",
  "reference_videos",
  "reference_audios",
  "video"
])
/** Options that moved to unified fields, with the field that replaced them. */
const MOVED_OPTIONS: Record<string, string> = {
  generate_audio: "output.generate_audio",
  reference_mode: "input.reference_mode"
}

const reference = (where: string, value: unknown): Reference => {
  if (!isObject(value)) return invalid(`"${where}" must be an object with a "url".`)
  checkFields(`${where}.`, value, REFERENCE_FIELDS)
  if (typeof value.url !== "string" || !isHttpUrl(value.url)) {
    return invalid(`"${where}.url" must be an absolute HTTP or HTTPS URL.`)
  }
  if (value.name !== undefined && typeof value.name !== "string") return invalid(`"${where}.name" must be a string.`)
  return value.name === undefined ? { url: value.url } : { url: value.url, name: value.name }
}

const references = (where: string, value: unknown): ReadonlyArray<Reference> => {
  if (value === undefined) return []
  if (!Array.isArray(value)) return invalid(`"${where}" must be an array.`)
  if (value.length === 0) return invalid(`"${where}" must not be empty when present.`)
  return value.map((item, i) => reference(`${where}[${i}]`, item))
}

const durationAllowed = (model: VideoModelCapability, d: number) =>
  "values" in model.durations
    ? model.durations.values.includes(d)
    : d >= model.durations.min && d <= model.durations.max

const describeDurations = (model: VideoModelCapability) =>
  "values" in model.durations
    ? model.durations.values.join(", ")
    : `${model.durations.min} to ${model.durations.max}`

const checkProviderOptions = (model: VideoModelCapability | undefined, value: unknown) => {
  if (value === undefined) return {}
  if (!isObject(value)) return fail("invalid_provider_options", `"provider_options" must be an object.`)
  const out: Record<string, Record<string, unknown>> = {}
  for (const [namespace, options] of Object.entries(value)) {
    if (!isObject(options)) {
      return fail("invalid_provider_options", `"provider_options.${namespace}" must be an object.`)
    }
    for (const key of Object.keys(options)) {
      const moved = own(MOVED_OPTIONS, key)
      if (moved !== undefined) {
        fail(
          "invalid_provider_options",
          `"provider_options.${namespace}.${key}" is no longer accepted; use "${moved}".`
        )
      }
      if (PROTECTED_OPTIONS.has(key)) {
        fail("invalid_provider_options", `"provider_options.${namespace}.${key}" may not override a request field.`)
      }
    }
    if (model === undefined) continue
    checkDeclaredOptions(model.id, model.provider_options, namespace, options)
    out[namespace] = options
  }
  return out
}

const inferMode = (
  model: VideoModelCapability,
  images: number,
  videos: number,
  audios: number
): ReferenceMode | null => {
  if (model.default_mode !== null) return model.default_mode
  if (images + videos + audios === 0) return null
  if (videos + audios > 0 || model.modes.frame === undefined) return model.modes.media ? "media" : null
  return "frame"
}

const checkMode = (
  mode: ReferenceMode,
  cap: ModeCapability,
  req: {
    image: Reference | null
    images: ReadonlyArray<Reference>
    videos: ReadonlyArray<Reference>
    audios: ReadonlyArray<Reference>
    duration: number
    aspectRatio: AspectRatio
  }
) => {
  const images = req.images.length + (req.image ? 1 : 0)
  const { videos, audios } = { videos: req.videos.length, audios: req.audios.length }
  if ((videos > 0 && cap.videos.max === 0) || (audios > 0 && cap.audios.max === 0)) {
    invalid(`Reference videos and audios are not accepted in "${mode}" mode.`)
  }
  if (mode === "images" && req.image) {
    fail("invalid_video_parameter", `In "images" mode images go in "input.reference_images", not "input.image".`)
  }
  if (images > cap.images.max) invalid(`Too many images for "${mode}" mode: at most ${cap.images.max}.`)
  if (videos > cap.videos.max) invalid(`Too many reference videos: at most ${cap.videos.max}.`)
  if (audios > cap.audios.max) invalid(`Too many reference audios: at most ${cap.audios.max}.`)
  if (images + videos + audios > cap.total) invalid(`Too many references: at most ${cap.total} in all.`)
  if (images < cap.images.min) {
    fail("invalid_video_parameter", `"${mode}" mode needs at least ${cap.images.min} image(s).`)
  }
  if (cap.audio_requires_visual && audios > 0 && images + videos === 0) {
    fail("invalid_video_parameter", "Reference audios must accompany at least one image or video.")
  }
  if (cap.only_durations && !cap.only_durations.includes(req.duration)) {
    fail("invalid_video_parameter", `"${mode}" mode needs output.duration ${cap.only_durations.join(" or ")}.`)
  }
  if (cap.only_aspect_ratios && !cap.only_aspect_ratios.includes(req.aspectRatio)) {
    fail("invalid_video_parameter", `"${mode}" mode needs output.aspect_ratio ${cap.only_aspect_ratios.join(" or ")}.`)
  }
}

const validate = (lookup: (id: string) => VideoModelCapability | undefined, body: unknown): ValidVideoRequest => {
  if (!isObject(body)) return invalid("The request body must be a JSON object.")
  checkFields("", body, TOP_FIELDS)
  if (typeof body.model !== "string" || body.model.length === 0) return invalid(`"model" is required.`)
  if (body.operation === undefined) return invalid(`"operation" is required.`)
  if (typeof body.operation === "string" && UNSUPPORTED_OPERATIONS.has(body.operation)) {
    return fail(
      "unsupported_video_operation",
      `Operation "${body.operation}" is not supported for video; use "generation".`
    )
  }
  if (body.operation !== "generation") return invalid(`"operation" must be "generation".`)
  const model = lookup(body.model)
  // Moved and protected options are refused for any model, before the model check.
  checkProviderOptions(undefined, body.provider_options)
  if (model === undefined) return fail("unsupported_video_model", `Model "${body.model}" is not available.`)
  const providerOptions = checkProviderOptions(model, body.provider_options)

  const input = body.input
  if (!isObject(input)) return invalid(`"input" is required and must be an object with a "prompt".`)
  checkFields("input.", input, INPUT_FIELDS)
  if (typeof input.prompt !== "string" || input.prompt.trim().length === 0) {
    return invalid(`"input.prompt" is required and must not be empty.`)
  }
  if ([...input.prompt].length > MAX_PROMPT_CHARS) {
    return fail("invalid_video_parameter", `"input.prompt" is longer than ${MAX_PROMPT_CHARS} characters.`)
  }

  const output = body.output
  if (output === undefined) return fail("video_duration_required", `"output.duration" is required.`)
  if (!isObject(output)) return invalid(`"output" must be an object.`)
  if ("resolution" in output) {
    return fail("invalid_video_parameter", `"output.resolution" is not accepted; the model ID fixes the resolution.`)
  }
  checkFields("output.", output, OUTPUT_FIELDS)
  if (output.duration === undefined || output.duration === null) {
    return fail("video_duration_required", `"output.duration" is required.`)
  }
  if (typeof output.duration !== "number" || !Number.isInteger(output.duration)) {
    return invalid(`"output.duration" must be an integer number of seconds.`)
  }
  const duration = output.duration
  if (!durationAllowed(model, duration)) {
    return fail("invalid_video_duration", `${model.id} accepts durations of ${describeDurations(model)} s.`)
  }
  const aspectRatio = (output.aspect_ratio ?? model.default_aspect_ratio) as AspectRatio
  if (typeof aspectRatio !== "string" || !model.aspect_ratios.includes(aspectRatio)) {
    return fail("invalid_video_aspect_ratio", `${model.id} accepts aspect ratios ${model.aspect_ratios.join(", ")}.`)
  }
  if (output.generate_audio !== undefined && typeof output.generate_audio !== "boolean") {
    return invalid(`"output.generate_audio" must be a boolean.`)
  }
  // A model that makes one kind only defaults to it, and refuses the other before anything is charged.
  const generateAudio = output.generate_audio ?? model.audio !== "never"
  if (model.audio === "never" && generateAudio) {
    return fail(
      "invalid_video_parameter",
      `"output.generate_audio" must be false for ${model.id}: it makes silent videos only.`
    )
  }
  if (model.audio === "always" && !generateAudio) {
    return fail(
      "invalid_video_parameter",
      `"output.generate_audio" must be true for ${model.id}: its videos always have a soundtrack.`
    )
  }

  const image = input.image === undefined ? null : reference("input.image", input.image)
  const images = references("input.reference_images", input.reference_images)
  const videos = references("input.reference_videos", input.reference_videos)
  const audios = references("input.reference_audios", input.reference_audios)

  const names = new Set<string>()
  for (const ref of [...(image ? [image] : []), ...images, ...videos, ...audios]) {
    if (ref.name === undefined || ref.name.length === 0) continue
    if (model.max_reference_name_length !== undefined && [...ref.name].length > model.max_reference_name_length) {
      invalid(
        `Reference name "${ref.name.slice(0, 20)}…" is longer than ${model.max_reference_name_length} characters.`
      )
    }
    if (names.has(ref.name)) invalid(`Reference name "${ref.name}" is used twice; names must be unique.`)
    names.add(ref.name)
  }

  let mode: ReferenceMode | null
  if (input.reference_mode !== undefined) {
    if (typeof input.reference_mode !== "string" || own(model.modes, input.reference_mode) === undefined) {
      return fail(
        "unsupported_reference_mode",
        `${model.id} supports reference_mode ${Object.keys(model.modes).join(", ")}.`
      )
    }
    mode = input.reference_mode as ReferenceMode
  } else {
    mode = inferMode(model, images.length + (image ? 1 : 0), videos.length, audios.length)
  }
  if (mode === null) {
    if (image || images.length + videos.length + audios.length > 0) {
      return invalid(`References need "input.reference_mode".`)
    }
  } else {
    checkMode(mode, model.modes[mode]!, { image, images, videos, audios, duration, aspectRatio })
  }

  if (body.client_reference_id !== undefined) {
    if (typeof body.client_reference_id !== "string") return invalid(`"client_reference_id" must be a string.`)
    if ([...body.client_reference_id].length > MAX_CLIENT_REFERENCE_ID) {
      return invalid(`"client_reference_id" is longer than ${MAX_CLIENT_REFERENCE_ID} characters.`)
    }
  }
  if (body.metadata !== undefined && !isObject(body.metadata)) return invalid(`"metadata" must be a JSON object.`)

  return {
    model: model.id,
    operation: "generation",
    prompt: input.prompt,
    mode,
    image,
    referenceImages: images,
    referenceVideos: videos,
    referenceAudios: audios,
    duration,
    aspectRatio,
    generateAudio,
    clientReferenceId: (body.client_reference_id as string | undefined) ?? null,
    metadata: (body.metadata as Record<string, unknown> | undefined) ?? null,
    providerOptions
  }
}

/** Validates a decoded JSON body against the capability table of its model. */
export const validateVideoRequest = (
  lookup: (id: string) => VideoModelCapability | undefined,
  body: unknown
): Either.Either<ValidVideoRequest, ValidationError> => runChecks(() => validate(lookup, body))

/** One of a served model's routes (its channel, and what it takes where it is narrower than the model). */
export type VideoRoute = ServedVideoModel["routes"][number]

/**
 * Whether a route takes a valid request, or the 400 of the first thing it
 * cannot take, with the spec's code for that field: its narrower durations
 * (`invalid_video_duration`), ratios (`invalid_video_aspect_ratio`) and
 * counts (`invalid_request`), a soundtrack it cannot make or leave out, or a
 * last frame it does not take (`invalid_video_parameter`, the spec's code
 * for a parameter the model cannot take in that combination), each message
 * naming the field. Admission and failover both ask it, so a task never
 * reaches a route that would have to fail it or drop part of it.
 */
export const routeRefusal = (route: VideoRoute, request: ValidVideoRequest): ValidationError | undefined =>
  Either.match(runChecks(() => checkRoute(route, request)), { onLeft: (refused) => refused, onRight: () => undefined })

const checkRoute = (route: VideoRoute, r: ValidVideoRequest) => {
  const cap = route.capability
  if (cap !== undefined) {
    if (!durationAllowed(cap, r.duration)) {
      fail("invalid_video_duration", `${cap.id} accepts durations of ${describeDurations(cap)} s.`)
    }
    if (!cap.aspect_ratios.includes(r.aspectRatio)) {
      fail("invalid_video_aspect_ratio", `${cap.id} accepts aspect ratios ${cap.aspect_ratios.join(", ")}.`)
    }
    const mode = r.mode === null ? undefined : cap.modes[r.mode]
    if (r.mode !== null && mode !== undefined) {
      checkMode(r.mode, mode, {
        image: r.image,
        images: r.referenceImages,
        videos: r.referenceVideos,
        audios: r.referenceAudios,
        duration: r.duration,
        aspectRatio: r.aspectRatio
      })
    }
  }
  const limits = route.limits
  if (limits === undefined) return
  if (limits.audio === "never" && r.generateAudio) {
    fail(
      "invalid_video_parameter",
      `"output.generate_audio" must be false for ${r.model}: it makes silent videos only.`
    )
  }
  if (limits.audio === "always" && !r.generateAudio) {
    fail(
      "invalid_video_parameter",
      `"output.generate_audio" must be true for ${r.model}: its videos always have a soundtrack.`
    )
  }
  if (limits.firstFrameRequired && !(r.mode === "frame" && (r.image ? 1 : 0) + r.referenceImages.length > 0)) {
    fail(
      "invalid_video_parameter",
      `A first frame ("input.image") is required for ${r.model}: it makes no video from text alone.`
    )
  }
  if (!limits.lastFrame && r.mode === "frame" && (r.image ? 1 : 0) + r.referenceImages.length > 1) {
    fail(
      "invalid_video_parameter",
      `A last frame ("input.reference_images") is not supported for ${r.model}: send a first frame only.`
    )
  }
}

/** A video create as the catalog admits it: the request as the model's table reads it, and who runs it. */
export interface AdmittedVideo {
  readonly request: ValidVideoRequest
  readonly served: ServedVideoModel
  /** The first of the model's routes (failover order) whose channel takes this request and new work. */
  readonly route: ServedVideoModel["routes"][number]
}

/**
 * The catalog's one decision on a video create, before anything is stored
 * or charged: the body validated against its model's table (400 with the
 * spec's code), then the channel that runs it. A channel may take less than
 * the model's table, or its upstream may not make or leave out a soundtrack
 * or take a last frame (Narrower.ts, `routeRefusal`): when none of the
 * model's channels takes the request, the first one's refusal is the 400,
 * never a failed task later. Among those that do, the first taking new work (`takesNew`: an
 * operator may drain or disable a channel) is chosen; none is 503
 * `model_unavailable`. Without `takesNew` (a quote) every channel counts.
 */
export function admitVideo(
  lookup: (id: string) => ServedVideoModel | undefined,
  body: unknown
): Effect.Effect<AdmittedVideo, ValidationError>
export function admitVideo(
  lookup: (id: string) => ServedVideoModel | undefined,
  body: unknown,
  takesNew: (channel: string) => Effect.Effect<boolean>
): Effect.Effect<AdmittedVideo, ValidationError | ModelUnavailable>
export function admitVideo(
  lookup: (id: string) => ServedVideoModel | undefined,
  body: unknown,
  takesNew: (channel: string) => Effect.Effect<boolean> = () => Effect.succeed(true)
): Effect.Effect<AdmittedVideo, ValidationError | ModelUnavailable> {
  return Effect.gen(function*() {
    const request = yield* validateVideoRequest((id) => lookup(id)?.capability, body)
    const served = lookup(request.model)!
    let refusal: ValidationError | undefined
    let anyOpen = false
    let taken = false
    for (const route of served.routes) {
      const refused = routeRefusal(route, request)
      refusal ??= refused
      const takes = refused === undefined
      const open = yield* takesNew(route.channel)
      anyOpen ||= open
      taken ||= takes
      if (takes && open) return { request, served, route }
    }
    if (!taken) return yield* Effect.fail(refusal!)
    return yield* ModelUnavailable.of(request.model, anyOpen ? " for this request" : "")
  })
}
