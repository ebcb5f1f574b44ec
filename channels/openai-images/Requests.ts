import { HttpBody, HttpClientRequest } from "@effect/platform"
import type { ImageJob } from "../../src/channel/contract/Adapter.ts"

/**
 * The unified image request as the OpenAI Images API takes it
 * (docs/adapters/openai-images.md, Requests): a generation is JSON to
 * `/images/generations`; an edit is a multipart form to `/images/edits` with
 * `image` (one file) or `image[]` (several) and an optional `mask`.
 *
 * | unified          | OpenAI                    |
 * |------------------|---------------------------|
 * | model (public)   | `model` = the channel's upstream model |
 * | input.prompt     | `prompt`                  |
 * | output.count     | `n`                       |
 * | output.size      | `size`                    |
 * | output.quality   | `quality` (values OpenAI does not know become `auto`) |
 * | output.format    | `output_format`           |
 * | input.images     | `image` / `image[]` files |
 * | input.mask       | `mask` file               |
 *
 * `response_format` is never sent: GPT image models always answer base64.
 */

const OPENAI_QUALITIES = new Set(["low", "medium", "high", "auto"])

const common = (job: ImageJob, upstreamModel: string) => ({
  model: upstreamModel,
  prompt: job.request.prompt,
  n: job.request.count,
  size: job.request.size,
  quality: OPENAI_QUALITIES.has(job.request.quality) ? job.request.quality : "auto",
  output_format: job.request.format
})

/** The file name and type OpenAI reads a part by; the bytes were decoded as an image at creation. */
const fileOf = (bytes: Uint8Array, name: string) => {
  const type = bytes[0] === 0x89 ? "image/png" : bytes[0] === 0xff ? "image/jpeg" : "image/webp"
  const extension = type.slice("image/".length)
  // A copy: Blob takes bytes over a plain ArrayBuffer only.
  return { blob: new Blob([new Uint8Array(bytes)], { type }), filename: `${name}.${extension}` }
}

export const imagesRequest = (base: string, apiKey: string, upstreamModel: string, job: ImageJob) => {
  if (job.request.operation === "generation") {
    return HttpClientRequest.post(`${base}/images/generations`).pipe(
      HttpClientRequest.bearerToken(apiKey),
      HttpClientRequest.bodyUnsafeJson(common(job, upstreamModel))
    )
  }
  const form = new FormData()
  for (const [name, value] of Object.entries(common(job, upstreamModel))) form.append(name, String(value))
  const field = job.inputs.images.length === 1 ? "image" : "image[]"
  job.inputs.images.forEach((bytes, i) => {
    const file = fileOf(bytes, `image-${i}`)
    form.append(field, file.blob, file.filename)
  })
  if (job.inputs.mask !== null) {
    const mask = fileOf(job.inputs.mask, "mask")
    form.append("mask", mask.blob, mask.filename)
  }
  return HttpClientRequest.post(`${base}/images/edits`).pipe(
    HttpClientRequest.bearerToken(apiKey),
    HttpClientRequest.setBody(HttpBody.formData(form))
  )
}
