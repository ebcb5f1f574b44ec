import type { ListedTask, ResultRef } from "../../src/channel/contract/Adapter.ts"
import { appOf } from "./Endpoints.ts"

/**
 * fal's queue statuses and results (docs/adapters/fal.md, States and
 * polling). The status says only whether the request is waiting, running or
 * done; whether it succeeded is known from the result fetch alone.
 */

const str = (value: unknown) => (typeof value === "string" && value.length > 0 ? value : undefined)

export type StatusOf =
  | { readonly _tag: "Queued" }
  | { readonly _tag: "Running" }
  | { readonly _tag: "Completed" }
  | { readonly _tag: "Unknown" }

/** `{status: IN_QUEUE | IN_PROGRESS | COMPLETED, …}` (202 while pending, 200 once done). */
export const statusOf = (body: unknown): StatusOf => {
  switch (str((body as { status?: unknown } | null)?.status)) {
    case "IN_QUEUE":
      return { _tag: "Queued" }
    case "IN_PROGRESS":
      return { _tag: "Running" }
    case "COMPLETED":
      return { _tag: "Completed" }
    default:
      return { _tag: "Unknown" }
  }
}

const file = (value: unknown, fallback: string): ResultRef | undefined => {
  const url = str((value as { url?: unknown } | null)?.url)
  if (url === undefined || !/^https?:\/\//.test(url)) return undefined
  return { url, mimeType: str((value as { content_type?: unknown }).content_type) ?? fallback }
}

/**
 * The files of a successful result: a video endpoint's `{video: {url,
 * content_type}}`, an image endpoint's `{images: [{url, content_type}]}`.
 * None is "done but no output", which the engine fails with its refund.
 */
export const resultsOf = (body: unknown): ReadonlyArray<ResultRef> => {
  const video = file((body as { video?: unknown } | null)?.video, "video/mp4")
  if (video !== undefined) return [video]
  const images = (body as { images?: unknown } | null)?.images
  return (Array.isArray(images) ? images : [])
    .map((image) => file(image, "image/png"))
    .filter((ref): ref is ResultRef => ref !== undefined)
}

interface ListedRequest {
  readonly request_id?: unknown
  readonly endpoint_id?: unknown
  readonly sent_at?: unknown
  readonly ended_at?: unknown
  readonly status_code?: unknown
  readonly duration?: unknown
}

/**
 * One request of fal's request history (`GET /models/requests/by-endpoint`)
 * as the provider's record of it, under the id the engine stores
 * (`{app}/requests/{id}`). fal bills successes only, so a request that ended
 * with 200 is billed and one that ended otherwise is not; the history carries
 * no billed units for marketplace endpoints (docs/adapters/fal.md, Usage and
 * billing), so no usage.
 */
export const listedOf = (item: ListedRequest): ListedTask | undefined => {
  const id = str(item?.request_id)
  const endpoint = str(item?.endpoint_id)
  const sent = Date.parse(str(item?.sent_at) ?? "")
  if (id === undefined || endpoint === undefined || Number.isNaN(sent)) return undefined
  const code = typeof item.status_code === "number" ? item.status_code : undefined
  const ended = str(item.ended_at) !== undefined
  return {
    upstreamId: `${appOf(endpoint)}/requests/${id}`,
    createdAt: sent,
    model: endpoint,
    status: code === undefined ? (ended ? "ended" : "running") : String(code),
    ...(code === undefined ? {} : { billed: code >= 200 && code <= 299 })
  }
}
