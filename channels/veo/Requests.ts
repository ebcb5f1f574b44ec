import { HttpClientRequest } from "@effect/platform"
import { Effect, Encoding } from "effect"
import { fileTypeFromBuffer } from "file-type"
import type { GenerationError, VideoJob } from "../../src/channel/contract/Adapter.ts"
import { unsupported } from "./Failures.ts"

/**
 * The unified famV request as a Veo `predictLongRunning` body
 * (docs/adapters/veo.md, Requests). Veo takes images as bytes, never URLs: each
 * reference is read through the engine's guarded fetcher (`job.readImage`) and
 * sent inline.
 *
 * | unified                                 | Veo                                                         |
 * |-----------------------------------------|-------------------------------------------------------------|
 * | model                                   | the path's model = the route's `upstream_model`             |
 * | input.prompt                            | `instances[0].prompt`                                       |
 * | frame: input.image, reference_images[0] | `instances[0].image` (first frame), `instances[0].lastFrame` |
 * | images: input.image, reference_images   | `instances[0].referenceImages[]`, `referenceType: "asset"`  |
 * | output.aspect_ratio                     | `parameters.aspectRatio`                                    |
 * | output.duration                         | `parameters.durationSeconds` (an integer)                   |
 * | the model's resolution                  | `parameters.resolution`                                     |
 * | output.generate_audio                   | Vertex: `parameters.generateAudio`; Gemini: see below       |
 * | provider_options.famV.negative_prompt   | `parameters.negativePrompt`                                 |
 * | provider_options.famV.seed              | Vertex: `parameters.seed`; Gemini: not sent                 |
 *
 * `sampleCount` is always 1. The Gemini API always generates audio on Veo 3.1
 * and refuses `generateAudio` and `seed` (Google's SDK rejects both in Gemini
 * mode): a request for a silent video is refused before anything is sent, and a
 * seed, a best-effort hint, is not sent. `personGeneration` is left to Google's
 * default, which differs per mode and region.
 */

export type Api = "gemini" | "vertex"

interface InlineImage {
  readonly bytesBase64Encoded: string
  readonly mimeType: string
}

/** Veo wants the image's `mimeType`; the engine checked nothing about the file, so it is sniffed here. */
const VEO_IMAGES = new Set(["image/png", "image/jpeg", "image/webp"])

const inline = (job: VideoJob, url: string, where: string): Effect.Effect<InlineImage, GenerationError> =>
  Effect.gen(function*() {
    const bytes = yield* job.readImage(url, where)
    const type = yield* Effect.tryPromise(() => fileTypeFromBuffer(bytes)).pipe(Effect.orElseSucceed(() => undefined))
    if (type === undefined || !VEO_IMAGES.has(type.mime)) {
      return yield* unsupported(`${where} is not a PNG, JPEG or WebP image.`)
    }
    return { bytesBase64Encoded: Encoding.encodeBase64(bytes), mimeType: type.mime }
  })

const famV = (job: VideoJob, key: string) => job.request.providerOptions.famV?.[key]

/** The create body, with its images read; a request Veo cannot take as it is fails before anything is sent. */
export const createBody = (job: VideoJob, api: Api) =>
  Effect.gen(function*() {
    const r = job.request
    const refs = [
      ...(r.image ? [{ url: r.image.url, where: "input.image" }] : []),
      ...r.referenceImages.map((ref, i) => ({ url: ref.url, where: `input.reference_images[${i}]` }))
    ]
    if (api === "gemini" && r.generateAudio === false) {
      return yield* unsupported("This video service always generates audio; \"output.generate_audio\" cannot be false.")
    }
    const instance: Record<string, unknown> = { prompt: r.prompt }
    switch (r.mode) {
      case null:
      case "frame": {
        if (refs.length > 2) return yield* unsupported("At most two frames can be sent to this video service.")
        const [first, last] = yield* Effect.forEach(refs, (ref) => inline(job, ref.url, ref.where))
        if (first) instance.image = first
        if (last) instance.lastFrame = last
        break
      }
      case "images": {
        if (refs.length > 3) {
          return yield* unsupported("At most three reference images can be sent to this video service.")
        }
        instance.referenceImages = yield* Effect.forEach(refs, (ref) =>
          Effect.map(inline(job, ref.url, ref.where), (image) => ({ image, referenceType: "asset" })))
        break
      }
      default:
        return yield* unsupported(`Reference mode "${r.mode}" is not supported by this video service.`)
    }
    const negative = famV(job, "negative_prompt")
    const seed = famV(job, "seed")
    const parameters: Record<string, unknown> = {
      aspectRatio: r.aspectRatio,
      durationSeconds: r.duration,
      resolution: job.capability.resolution,
      sampleCount: 1,
      ...(typeof negative === "string" ? { negativePrompt: negative } : {}),
      ...(api === "vertex" ? { generateAudio: r.generateAudio } : {}),
      ...(api === "vertex" && typeof seed === "number" ? { seed } : {})
    }
    return { instances: [instance], parameters }
  })

export interface Endpoint {
  readonly api: Api
  /** Without a trailing slash: `…/v1beta` (Gemini) or `…/v1` (Vertex). */
  readonly base: string
  readonly project?: string | undefined
  readonly location?: string | undefined
}

const authorized = (request: HttpClientRequest.HttpClientRequest, api: Api, secret: string) =>
  api === "gemini"
    ? HttpClientRequest.setHeader(request, "x-goog-api-key", secret)
    : HttpClientRequest.bearerToken(request, secret)

export const createRequest = (e: Endpoint, model: string, secret: string, body: unknown) => {
  const path = e.api === "gemini"
    ? `models/${encodeURIComponent(model)}`
    : `projects/${encodeURIComponent(e.project!)}/locations/${
      encodeURIComponent(e.location!)
    }/publishers/google/models/${encodeURIComponent(model)}`
  return authorized(
    HttpClientRequest.post(`${e.base}/${path}:predictLongRunning`).pipe(HttpClientRequest.bodyUnsafeJson(body)),
    e.api,
    secret
  )
}

/**
 * An operation name as Google gives it (`models/…/operations/…`,
 * `projects/…/operations/…`); it becomes a URL path, so nothing else is polled.
 */
export const isOperationName = (name: string) =>
  /^[A-Za-z0-9][A-Za-z0-9._~\-/]*\/operations\/[A-Za-z0-9._~-]+$/.test(name) && !name.split("/").includes("..")

/** Gemini: `GET {base}/{name}`. Vertex: `POST {base}/{model resource}:fetchPredictOperation` with the name. */
export const operationRequest = (e: Endpoint, name: string, secret: string) =>
  e.api === "gemini"
    ? authorized(HttpClientRequest.get(`${e.base}/${name}`), e.api, secret)
    : authorized(
      HttpClientRequest.post(`${e.base}/${name.slice(0, name.lastIndexOf("/operations/"))}:fetchPredictOperation`).pipe(
        HttpClientRequest.bodyUnsafeJson({ operationName: name })
      ),
      e.api,
      secret
    )
