import { HttpBody, HttpClientRequest } from "@effect/platform"
import type { ImageJob, VideoJob } from "../../src/channel/contract/Adapter.ts"

/**
 * The unified request re-encoded for the upstream gateway: the same API, so
 * the mapping is nearly the identity.
 *
 * | ours                         | upstream                                  |
 * |------------------------------|-------------------------------------------|
 * | model (public id)            | `model` = the channel's `upstream_model`  |
 * | input.* reference media URLs | passed through as URLs (never downloaded) |
 * | output.*                     | the same fields                           |
 * | provider_options             | passed through (already checked by us)    |
 * | task id                      | `Idempotency-Key` and `client_reference_id` |
 *
 * The caller's `metadata` and `client_reference_id` stay here: the upstream
 * is another operator's service and needs neither. An image edit whose
 * inputs were uploaded to us as files is sent as multipart with those bytes.
 */

const refs = (list: ReadonlyArray<{ readonly url: string; readonly name?: string }>) =>
  list.length === 0
    ? undefined
    : list.map((r) => (r.name === undefined ? { url: r.url } : { url: r.url, name: r.name }))

const options = (providerOptions: Record<string, Record<string, unknown>>) =>
  Object.keys(providerOptions).length === 0 ? undefined : providerOptions

export const videoBody = (job: VideoJob) => {
  const r = job.request
  return {
    model: job.upstreamModel,
    operation: "generation",
    input: {
      prompt: r.prompt,
      ...(r.mode !== null ? { reference_mode: r.mode } : {}),
      ...(r.image !== null ? { image: refs([r.image])![0] } : {}),
      ...(refs(r.referenceImages) ? { reference_images: refs(r.referenceImages) } : {}),
      ...(refs(r.referenceVideos) ? { reference_videos: refs(r.referenceVideos) } : {}),
      ...(refs(r.referenceAudios) ? { reference_audios: refs(r.referenceAudios) } : {})
    },
    output: { duration: r.duration, aspect_ratio: r.aspectRatio, generate_audio: r.generateAudio },
    client_reference_id: job.taskId,
    ...(options(r.providerOptions) ? { provider_options: r.providerOptions } : {})
  }
}

const fileOf = (bytes: Uint8Array, name: string) => {
  const type = bytes[0] === 0x89 ? "image/png" : bytes[0] === 0xff ? "image/jpeg" : "image/webp"
  return { blob: new Blob([new Uint8Array(bytes)], { type }), filename: `${name}.${type.slice("image/".length)}` }
}

/** The body of an image task: JSON when every input is a URL, multipart when some were uploaded to us. */
export const imageBody = (job: ImageJob): HttpBody.HttpBody => {
  const r = job.request
  const sources = [...r.images, ...(r.mask === null ? [] : [r.mask])]
  if (sources.every((s) => "url" in s)) {
    const url = (s: ImageJob["request"]["images"][number]) => ({ url: (s as { readonly url: string }).url })
    return HttpBody.unsafeJson({
      model: job.upstreamModel,
      operation: r.operation,
      input: {
        prompt: r.prompt,
        ...(r.images.length > 0 ? { images: r.images.map(url) } : {}),
        ...(r.mask !== null ? { mask: url(r.mask) } : {})
      },
      output: { count: r.count, size: r.size, quality: r.quality, format: r.format },
      client_reference_id: job.taskId,
      ...(options(r.providerOptions) ? { provider_options: r.providerOptions } : {})
    })
  }
  const form = new FormData()
  const fields = {
    model: job.upstreamModel,
    operation: "edit",
    prompt: r.prompt,
    size: r.size,
    quality: r.quality,
    output_format: r.format
  }
  for (const [name, value] of Object.entries(fields)) form.append(name, value)
  job.inputs.images.forEach((bytes, i) => {
    const file = fileOf(bytes, `image-${i}`)
    form.append("image", file.blob, file.filename)
  })
  if (job.inputs.mask !== null) {
    const mask = fileOf(job.inputs.mask, "mask")
    form.append("mask", mask.blob, mask.filename)
  }
  return HttpBody.formData(form)
}

/** `POST {base}/v1/{kind}/tasks` with the model token and our task id as the Idempotency-Key. */
export const createRequest = (
  base: string,
  kind: "video" | "image",
  modelToken: string,
  taskId: string,
  body: HttpBody.HttpBody
) =>
  HttpClientRequest.post(`${base}/v1/${kind}/tasks`).pipe(
    HttpClientRequest.bearerToken(modelToken),
    HttpClientRequest.setHeader("idempotency-key", taskId),
    HttpClientRequest.setBody(body)
  )

/** The spec's batch query, `POST {base}/v1/{kind}/tasks/query`, with the resource key. */
export const queryRequest = (base: string, kind: "video" | "image", resourceKey: string, ids: ReadonlyArray<string>) =>
  HttpClientRequest.post(`${base}/v1/${kind}/tasks/query`).pipe(
    HttpClientRequest.bearerToken(resourceKey),
    HttpClientRequest.bodyUnsafeJson({ task_ids: ids })
  )

/** The upstream gateway's own cancel of one of its tasks, with the `ak_` key. */
export const cancelRequest = (base: string, kind: "video" | "image", resourceKey: string, id: string) =>
  HttpClientRequest.post(`${base}/v1/${kind}/tasks/${encodeURIComponent(id)}/cancel`).pipe(
    HttpClientRequest.bearerToken(resourceKey)
  )
