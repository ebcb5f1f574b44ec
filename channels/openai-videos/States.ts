import { UpstreamState, usageOf, withUpstream } from "../../src/channel/contract/Adapter.ts"
import { fromTaskError } from "./Failures.ts"

/**
 * An OpenAI Video object (or a relay's version of it) as a normalised state.
 * OpenAI answers `queued`, `in_progress`, `completed`, `failed`; relays in
 * front of other models answer their own words (`done`, `succeeded`,
 * `NOT_START`, `unknown`, no status at all right after the create;
 * docs/adapters/openai-videos.md, States and polling). The words below are read
 * case-insensitively; `unknown`, a missing status and any word not listed are
 * Unknown, polled again until the channel's deadline, never a failure on sight
 * (QuantumNous/new-api #5045 and PR #5927 on GitHub).
 */

const PENDING = new Set([
  "queued",
  "pending",
  "submitted",
  "not_start",
  "notstarted",
  "created",
  "starting",
  "preparing"
])
const RUNNING = new Set(["in_progress", "processing", "running", "generating"])
const SUCCEEDED = new Set(["completed", "complete", "succeeded", "success", "done", "finished"])
const FAILED = new Set(["failed", "failure", "fail", "error", "cancelled", "canceled", "expired"])

export interface VideoObject {
  readonly id?: unknown
  readonly status?: unknown
  readonly progress?: unknown
  readonly error?: unknown
  readonly seconds?: unknown
  readonly size?: unknown
}

/**
 * What a video is billed by (docs/adapters/openai-videos.md, Usage and
 * billing): its `seconds`, as the object says them (a string, `"8"`), priced
 * per second by its model and `size`; kept beside.
 */
const usageIn = (video: VideoObject) =>
  usageOf("second", video.seconds, {
    seconds: video.seconds,
    ...(video.size === undefined ? {} : { size: video.size })
  })

const progressOf = (value: unknown) => {
  const n = typeof value === "string" ? Number.parseFloat(value) : value
  return typeof n === "number" && Number.isFinite(n) ? Math.min(100, Math.max(0, n)) : undefined
}

/** `contentUrl` is where this video's bytes are, should it be finished. */
/** A string member of the upstream's error object, which may be anything. */
const stringIn = (value: unknown, key: string): string | undefined => {
  const member = typeof value === "object" && value !== null ? (value as Record<string, unknown>)[key] : undefined
  return typeof member === "string" ? member : undefined
}

export const stateOf = (video: VideoObject, contentUrl: string): UpstreamState => {
  const status = typeof video.status === "string" ? video.status.trim().toLowerCase() : undefined
  if (status === undefined) return UpstreamState.Unknown({ answer: video })
  if (PENDING.has(status)) return UpstreamState.Pending({ progress: 0, answer: video })
  if (RUNNING.has(status)) return UpstreamState.Pending({ progress: progressOf(video.progress), answer: video })
  if (SUCCEEDED.has(status)) {
    // The object carries no URL: the bytes are always behind `/content`, with the channel's key.
    return UpstreamState.Succeeded({
      results: [{ url: contentUrl, mimeType: "video/mp4", auth: "api_key" }],
      answer: video,
      usage: usageIn(video),
      billed: true
    })
  }
  if (FAILED.has(status)) {
    return UpstreamState.Failed({
      error: withUpstream(fromTaskError(video.error), {
        code: stringIn(video.error, "code") ?? status,
        message: stringIn(video.error, "message")
      }),
      answer: video,
      // A video that failed (or was cancelled or expired) was not delivered, and is not billed.
      usage: usageIn(video),
      billed: false
    })
  }
  return UpstreamState.Unknown({ answer: video })
}
