import {
  type Charge,
  GenerationError,
  type ResultRef,
  sumOf,
  UpstreamState,
  usageOf
} from "../../src/channel/contract/Adapter.ts"

/**
 * The upstream gateway's task object as a normalised state. Its statuses
 * are the spec's four; anything else (a newer release's status, a missing
 * one) is Unknown, polled again until the deadline, never a failure on
 * sight. A failure keeps the upstream's code and `retryable`: they are the
 * spec's own codes, meant for callers.
 */

interface UpstreamTask {
  readonly id?: unknown
  readonly status?: unknown
  readonly progress?: unknown
  readonly result?: { readonly videos?: unknown; readonly images?: unknown } | null
  readonly error?: { readonly code?: unknown; readonly message?: unknown; readonly retryable?: unknown } | null
}

const str = (value: unknown) => (typeof value === "string" && value.length > 0 ? value : undefined)

/** Only the upstream's own asset URLs take its resource key; a signed URL must go as it is (S3 refuses two signatures). */
const resultsOf = (task: UpstreamTask, kind: "video" | "image", base: string): ReadonlyArray<ResultRef> => {
  const items = kind === "video" ? task.result?.videos : task.result?.images
  if (!Array.isArray(items)) return []
  return items.flatMap((item: { url?: unknown; mime_type?: unknown; url_auth?: unknown }) => {
    const url = str(item?.url)
    if (url === undefined) return []
    const ownAsset = url.startsWith(`${base}/v1/assets/`)
    const auth = item.url_auth === "resource_api_key" || (item.url_auth === undefined && ownAsset)
      ? "resource_api_key"
      : "none"
    return [{ url, mimeType: str(item.mime_type), auth }]
  })
}

/**
 * What the upstream gateway charges us (docs/adapters/gateway.md, Usage and
 * billing): its own caller's charge, for the seconds of video (each result's
 * `duration_ms`) or the images it delivered; a failed task is refunded in
 * full there, so it is not billed.
 */
const chargeOf = (task: UpstreamTask, kind: "video" | "image", succeeded: boolean): Charge => {
  if (!succeeded) return { billed: false }
  const items = kind === "video" ? task.result?.videos : task.result?.images
  const list = Array.isArray(items) ? items as ReadonlyArray<{ duration_ms?: unknown }> : []
  if (kind === "image") return { usage: usageOf("image", list.length), billed: true }
  const ms = sumOf(list.map((v) => v?.duration_ms))
  return { usage: usageOf("second", ms === undefined ? undefined : ms / 1000, { duration_ms: ms }), billed: true }
}

export const stateOf = (
  task: UpstreamTask,
  kind: "video" | "image",
  base: string,
  fallbackCode: string
): UpstreamState => {
  switch (task.status) {
    case "queued":
      return UpstreamState.Pending({ progress: 0, answer: task })
    case "in_progress":
      return UpstreamState.Pending({
        progress: typeof task.progress === "number" ? task.progress : undefined,
        answer: task
      })
    case "succeeded":
      return UpstreamState.Succeeded({
        results: resultsOf(task, kind, base),
        answer: task,
        ...chargeOf(task, kind, true)
      })
    case "failed":
      return UpstreamState.Failed({
        answer: task,
        ...chargeOf(task, kind, false),
        error: new GenerationError({
          code: str(task.error?.code) ?? fallbackCode,
          message: str(task.error?.message) ?? "The task failed.",
          retryable: typeof task.error?.retryable === "boolean" ? task.error.retryable : true,
          transient: false,
          upstream: { code: str(task.error?.code), message: str(task.error?.message) }
        })
      })
    default:
      return UpstreamState.Unknown({ answer: task })
  }
}

/** The batch answer's tasks by id; ids it lists as missing (or leaves out) are absent, so the engine treats them as Unknown. */
export const statesOf = (body: unknown, kind: "video" | "image", base: string, fallbackCode: string) => {
  const states = new Map<string, UpstreamState>()
  const data = (body as { data?: unknown } | null)?.data
  if (!Array.isArray(data)) return states
  for (const task of data as ReadonlyArray<UpstreamTask>) {
    const id = str(task?.id)
    if (id !== undefined) states.set(id, stateOf(task, kind, base, fallbackCode))
  }
  return states
}
