import { HttpClientRequest } from "@effect/platform"
import { Either, Encoding } from "effect"
import type { ImageJob, VideoJob } from "../../src/channel/contract/Adapter.ts"
import type { Endpoints, ImageEndpoint, VideoEndpoint } from "./Endpoints.ts"

/**
 * The unified request as the input of a fal endpoint (docs/adapters/fal.md,
 * Requests), from the endpoint's data (Endpoints.ts). What the endpoint has
 * no field for is refused here, before anything is sent; the catalog
 * refuses most of it sooner, at creation, from what the route takes
 * (Endpoints.ts `limitsOf`, and the route's `narrower`).
 *
 * | unified                          | fal input                                                  |
 * |----------------------------------|------------------------------------------------------------|
 * | model                            | the endpoint (route's `upstream_model`, or its sibling)    |
 * | input.prompt                     | `prompt`                                                   |
 * | frame: input.image, ref_images[0] | first frame (`image_url`, `start_image_url`, `first_frame_url`), last frame (`end_image_url`, `last_frame_url`) |
 * | images: input.image, ref_images  | `image_urls` of the reference endpoint; `@name` → `@Image1`… (Kling O3) |
 * | output.duration                  | `duration` as the endpoint's string (`"5"`, `"8s"`)        |
 * | output.aspect_ratio              | `aspect_ratio` (where the endpoint takes it)               |
 * | the model's resolution           | `resolution` as the endpoint spells it (where it takes it) |
 * | output.generate_audio            | `generate_audio`                                           |
 * | provider_options.<family>.seed   | `seed` (where the endpoint has it)                         |
 * | provider_options.<family>.negative_prompt | `negative_prompt` (where the endpoint has it)     |
 * | the family's other options       | the endpoint's field for each (`camera_fixed`, `cfg_scale`) |
 * | image: prompt, n, format, size   | `prompt`, `num_images`, `output_format`, `aspect_ratio` (the size's ratio) |
 * | image edit: input images         | `image_urls` as data URIs                                  |
 */

export interface Submit {
  /** The endpoint the request goes to (the route's, or its image sibling). */
  readonly endpoint: string
  readonly input: Record<string, unknown>
}

type Reference = VideoJob["request"]["referenceImages"][number]

interface Inputs {
  readonly frames: ReadonlyArray<Reference>
  readonly refs: ReadonlyArray<Reference>
}

const sibling = (named: VideoEndpoint, { frames, refs }: Inputs): string | undefined => {
  if (refs.length > 0) return named.line.references
  if (frames.length === 0) return named.line.text
  if (frames.length === 1) return named.line.image
  // A last frame: the first-and-last sibling where the line has one, else the image one if it takes a last frame.
  return named.line.firstLast ?? named.line.image
}

const inputsOf = (job: VideoJob): Either.Either<Inputs, string> => {
  const r = job.request
  // The spec's order: input.image first, then reference_images.
  const images = [...(r.image ? [r.image] : []), ...r.referenceImages]
  switch (r.mode) {
    case null:
      return Either.right({ frames: [], refs: [] })
    case "frame":
      return images.length > 2
        ? Either.left("At most two frames can be sent to this video service.")
        : Either.right({ frames: images, refs: [] })
    case "images":
      return Either.right({ frames: [], refs: images })
    default:
      return Either.left(`Reference mode "${r.mode}" is not supported by this video service.`)
  }
}

/**
 * The model's `provider_options` the endpoint has fields for; any other is
 * refused (it would be ignored). The adapter adds no namespace of its own,
 * so every namespace a valid request holds is its model's family's.
 */
const optionsOf = (job: VideoJob, endpoint: VideoEndpoint): Either.Either<Record<string, unknown>, string> => {
  const fields: Record<string, string> = {
    ...(endpoint.seed ? { seed: "seed" } : {}),
    ...(endpoint.negativePrompt ? { negative_prompt: "negative_prompt" } : {}),
    ...endpoint.options
  }
  const input: Record<string, unknown> = {}
  for (const [namespace, given] of Object.entries(job.request.providerOptions)) {
    for (const [key, value] of Object.entries(given ?? {})) {
      const field = fields[key]
      if (field === undefined) {
        return Either.left(
          `"provider_options.${namespace}.${key}" is not supported by this video service for this model.`
        )
      }
      input[field] = value
    }
  }
  return Either.right(input)
}

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

/** Each reference's `@name` in the prompt as the endpoint's tag of that image (`@Image2`), longest names first. */
const tagged = (prompt: string, refs: ReadonlyArray<Reference>, tag: (i: number) => string) =>
  refs.map((ref, i) => ({ name: ref.name, tag: tag(i) }))
    .filter((n): n is { name: string; tag: string } => typeof n.name === "string" && n.name.length > 0)
    .sort((a, b) => b.name.length - a.name.length)
    .reduce((text, { name, tag: t }) => text.replace(new RegExp(`@${escape(name)}(?![\\w-])`, "g"), t), prompt)

/** The endpoint and input of a video job, or the message of a request the endpoint cannot take (never sent). */
export const videoSubmit = (endpoints: Endpoints) => (job: VideoJob): Either.Either<Submit, string> =>
  Either.gen(function*() {
    const named = endpoints.get(job.upstreamModel)
    if (named === undefined || named.kind !== "video") {
      return yield* Either.left(`The model is not available on this video service.`)
    }
    const { frames, refs } = yield* inputsOf(job)
    const id = sibling(named, { frames, refs })
    if (id === undefined) {
      return yield* Either.left(`Reference mode "${job.request.mode}" is not supported by this video service.`)
    }
    const endpoint = endpoints.get(id) as VideoEndpoint
    const references = endpoint.references
    if (references !== undefined && refs.length > references.max) {
      return yield* Either.left(`At most ${references.max} reference images can be sent to this video service.`)
    }
    if (frames.length === 2 && endpoint.lastFrame === undefined) {
      return yield* Either.left("A last frame is not supported by this video service for this model.")
    }
    const r = job.request
    if (!endpoint.durations.includes(r.duration)) {
      return yield* Either.left(
        `A duration of ${r.duration} s is not supported by this video service for this model (it takes ${
          endpoint.durations.join(", ")
        }).`
      )
    }
    // Without a first frame the ratio is ours to ask; with one, the endpoint either takes the field or uses the frame's.
    if (endpoint.aspectRatios !== undefined && !endpoint.aspectRatios.includes(r.aspectRatio)) {
      return yield* Either.left(
        `The aspect ratio ${r.aspectRatio} is not supported by this video service for this model.`
      )
    }
    const resolution = job.capability.resolution
    const spelled = endpoint.resolutions?.[resolution]
    if (endpoint.resolutions !== undefined && spelled === undefined) {
      return yield* Either.left(`The resolution ${resolution} is not supported by this video service for this model.`)
    }
    // Without the switch the caller's choice cannot be sent: refused rather than dropped (admission refuses it first).
    if (endpoint.audio === "always" && !r.generateAudio) {
      return yield* Either.left("Silent videos are not supported by this video service for this model.")
    }
    if (endpoint.audio === "never" && r.generateAudio) {
      return yield* Either.left(
        `This video service makes silent videos only for this model: set "output.generate_audio" to false.`
      )
    }
    const options = yield* optionsOf(job, endpoint)
    const input: Record<string, unknown> = {
      prompt: references?.tag !== undefined ? tagged(r.prompt, refs, references.tag) : r.prompt,
      ...(references !== undefined ? { [references.field]: refs.map((ref) => ref.url) } : {}),
      ...(endpoint.firstFrame !== undefined && frames[0] ? { [endpoint.firstFrame]: frames[0].url } : {}),
      ...(endpoint.lastFrame !== undefined && frames[1] ? { [endpoint.lastFrame]: frames[1].url } : {}),
      duration: endpoint.duration(r.duration),
      ...(endpoint.aspectRatios !== undefined ? { aspect_ratio: r.aspectRatio } : {}),
      ...(spelled !== undefined ? { resolution: spelled } : {}),
      ...(endpoint.audio === "switch" ? { generate_audio: r.generateAudio } : {}),
      ...options
    }
    return { endpoint: id, input }
  })

const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b))

/** A unified size `WxH` as the ratio it reduces to (`1536x1024` → `3:2`). */
const ratioOf = (size: string) => {
  const match = /^(\d+)x(\d+)$/.exec(size)
  if (!match) return undefined
  const [w, h] = [Number(match[1]), Number(match[2])]
  const d = gcd(w, h)
  return d === 0 ? undefined : `${w / d}:${h / d}`
}

/** The media type of an input image's bytes, for its data URI (the engine accepted only these). */
const mimeOf = (bytes: Uint8Array) =>
  bytes[0] === 0x89 && bytes[1] === 0x50
    ? "image/png"
    : bytes[0] === 0xff && bytes[1] === 0xd8
    ? "image/jpeg"
    : bytes[0] === 0x52 && bytes[8] === 0x57
    ? "image/webp"
    : "application/octet-stream"

/** The endpoint and input of an image job, or the message of a request the endpoint cannot take (never sent). */
export const imageSubmit = (endpoints: Endpoints) => (job: ImageJob): Either.Either<Submit, string> =>
  Either.gen(function*() {
    const endpoint = endpoints.get(job.upstreamModel)
    if (endpoint === undefined || endpoint.kind !== "image") {
      return yield* Either.left("The model is not available on this image service.")
    }
    const e: ImageEndpoint = endpoint
    const r = job.request
    if (job.inputs.mask !== null) return yield* Either.left("A mask is not supported by this image service.")
    if (r.count > e.maxCount) {
      return yield* Either.left(`At most ${e.maxCount} images can be made by this image service in one task.`)
    }
    if (!e.formats.includes(r.format)) {
      return yield* Either.left(`The format ${r.format} is not supported by this image service.`)
    }
    const ratio = ratioOf(r.size)
    if (ratio === undefined || !e.aspectRatios.includes(ratio)) {
      return yield* Either.left(`The size ${r.size} is not supported by this image service.`)
    }
    const edit = r.operation === "edit"
    const input: Record<string, unknown> = {
      prompt: r.prompt,
      num_images: r.count,
      output_format: r.format,
      aspect_ratio: ratio,
      ...(edit
        ? {
          [e.images]: job.inputs.images.map((bytes) => `data:${mimeOf(bytes)};base64,${Encoding.encodeBase64(bytes)}`)
        }
        : {})
    }
    return { endpoint: edit ? e.edit : e.generation, input }
  })

const withKey = (key: string) => HttpClientRequest.setHeader("authorization", `Key ${key}`)

/** `POST {base}/{endpoint}`, with `fal_webhook` when the channel takes callbacks. */
export const submitRequest = (base: string, key: string, submit: Submit, webhook: string | undefined) =>
  HttpClientRequest.post(`${base}/${submit.endpoint}`, {
    urlParams: webhook !== undefined ? { fal_webhook: webhook } : {}
  }).pipe(withKey(key), HttpClientRequest.bodyUnsafeJson(submit.input))

/**
 * The id the engine stores: the request's path under the queue,
 * `{owner}/{alias}/requests/{request_id}`, as fal's `response_url` gives it
 * (without the endpoint's subpath); status, result and cancel hang off it.
 */
const ID = /^(?:[A-Za-z0-9_.-]+\/){2,3}requests\/[A-Za-z0-9_-]{1,100}$/
export const isUpstreamId = (id: string) => ID.test(id)

export const statusRequest = (base: string, key: string, id: string) =>
  HttpClientRequest.get(`${base}/${id}/status`).pipe(withKey(key))
export const resultRequest = (base: string, key: string, id: string) =>
  HttpClientRequest.get(`${base}/${id}`).pipe(withKey(key))
export const cancelRequest = (base: string, key: string, id: string) =>
  HttpClientRequest.put(`${base}/${id}/cancel`).pipe(withKey(key))

/** Endpoint ids one history query may name (fal takes up to 50). */
export const HISTORY_ENDPOINTS_PER_CALL = 50

/**
 * `GET {platform}/models/requests/by-endpoint`: the account's requests to
 * these endpoints in `[start, end)`, 100 a page from `cursor` (reconciliation).
 */
export const historyRequest = (
  platform: string,
  key: string,
  endpoints: ReadonlyArray<string>,
  window: { readonly from: number; readonly to: number },
  cursor: string | undefined
) =>
  HttpClientRequest.get(`${platform}/models/requests/by-endpoint`, {
    urlParams: [
      ...endpoints.map((e) => ["endpoint_id", e] as const),
      ["start", new Date(window.from).toISOString()],
      ["end", new Date(window.to).toISOString()],
      ["limit", "100"],
      ...(cursor === undefined ? [] : [["cursor", cursor] as const])
    ]
  }).pipe(withKey(key))
