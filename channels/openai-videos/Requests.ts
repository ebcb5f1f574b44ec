import { HttpClientRequest } from "@effect/platform"
import type { VideoJob } from "../../src/channel/contract/Adapter.ts"

/**
 * The unified video request as an OpenAI Videos create
 * (docs/adapters/openai-videos.md, Requests).
 *
 * | unified                          | OpenAI Videos                                    |
 * |----------------------------------|--------------------------------------------------|
 * | model (public id)                | `model` = the route's `upstream_model`           |
 * | input.prompt                     | `prompt`                                         |
 * | output.duration                  | `seconds`, a string ("8")                        |
 * | output.aspect_ratio + resolution | `size`, "WIDTHxHEIGHT" (16:9 720p → "1280x720")  |
 * | input.image (first frame)        | `input_reference: { image_url }`                 |
 *
 * The create is JSON. The first frame goes as the protocol's `image_url`
 * reference rather than an uploaded file: the upstream fetches the caller's
 * URL itself, so this process never downloads a caller-chosen address
 * through the plain upstream client (which has no private-address guard).
 * What the protocol cannot carry is refused before this (Unsupported.ts).
 */

const LINES = { "480p": 480, "720p": 720, "1080p": 1080 } as const

/** Both sides even (H.264 with 4:2:0 chroma needs it): the short side is the resolution's lines. */
export const sizeOf = (resolution: keyof typeof LINES, aspectRatio: string) => {
  const short = LINES[resolution]
  const [a, b] = aspectRatio.split(":").map(Number) as [number, number]
  const long = 2 * Math.round((short * Math.max(a, b)) / Math.min(a, b) / 2)
  return a >= b ? `${long}x${short}` : `${short}x${long}`
}

export const createBody = (job: VideoJob) => {
  const r = job.request
  return {
    model: job.upstreamModel,
    prompt: r.prompt,
    seconds: String(r.duration),
    size: sizeOf(job.capability.resolution, r.aspectRatio),
    ...(r.image !== null ? { input_reference: { image_url: r.image.url } } : {})
  }
}

/** `base_url` (trailing slashes already dropped, HttpUrl) ends with the API version (`https://api.openai.com/v1`); paths follow it. */
export const endpoints = (base: string) => {
  const video = (id: string) => `${base}/videos/${encodeURIComponent(id)}`
  return {
    create: (apiKey: string, job: VideoJob) =>
      HttpClientRequest.post(`${base}/videos`).pipe(
        HttpClientRequest.bearerToken(apiKey),
        HttpClientRequest.bodyUnsafeJson(createBody(job))
      ),
    retrieve: (apiKey: string, id: string) =>
      HttpClientRequest.get(video(id)).pipe(HttpClientRequest.bearerToken(apiKey)),
    /** Deletes a completed or failed video, its content with it (`video.deleted`). */
    remove: (apiKey: string, id: string) =>
      HttpClientRequest.del(video(id)).pipe(HttpClientRequest.bearerToken(apiKey)),
    /** Where a finished video's bytes are; the engine hands it back to `fetchResult`. */
    contentUrl: (id: string) => `${video(id)}/content`
  }
}
