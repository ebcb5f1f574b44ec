import { UpstreamState, usageOf, withUpstream } from "../../src/channel/contract/Adapter.ts"
import { fromTaskFailure } from "./Failures.ts"

/**
 * A DashScope task (`GET /api/v1/tasks/{task_id}`: `{ request_id, output,
 * usage }`) as a normalised state (docs/adapters/alibaba.md, States and
 * polling). `output.task_status` is PENDING or RUNNING while it waits,
 * SUCCEEDED with `output.video_url`, FAILED with `output.code` and
 * `output.message`, CANCELED after a cancel, UNKNOWN for a task DashScope
 * does not know (never created, or past its 24 hours). UNKNOWN, any other
 * word or none is Unknown: polled again until the channel's deadline,
 * never failed on sight. A success without a URL is "done but no output":
 * the engine fails it with its refund.
 *
 * Source: https://www.alibabacloud.com/help/en/model-studio/manage-asynchronous-tasks
 * and the video-synthesis references (task query).
 */

export interface TaskAnswer {
  readonly output?: {
    readonly task_id?: unknown
    readonly task_status?: unknown
    readonly video_url?: unknown
    readonly code?: unknown
    readonly message?: unknown
  }
  readonly usage?: Record<string, unknown>
}

const str = (value: unknown) => (typeof value === "string" && value !== "" ? value : undefined)

/**
 * What DashScope bills a task by (docs/adapters/alibaba.md, Usage and
 * billing): the seconds of video it made (`usage.video_duration`), priced
 * per second by its model and resolution; `video_ratio` (the size) and
 * `video_count` kept beside. Only a succeeded task is billed.
 */
const usageIn = (usage: Record<string, unknown> | undefined) =>
  usage === undefined ? undefined : usageOf("second", usage["video_duration"], usage)

/**
 * When the result link lapses: the link is an OSS URL signed until its
 * `Expires` (seconds since the epoch); DashScope keeps it 24 hours.
 */
const expiryOf = (url: string): number | undefined => {
  try {
    const expires = Number(new URL(url).searchParams.get("Expires"))
    return Number.isFinite(expires) && expires > 0 ? expires * 1000 : undefined
  } catch {
    return undefined
  }
}

export const stateOf = (answer: TaskAnswer): UpstreamState => {
  const output = answer.output
  const status = str(output?.task_status)
  switch (status) {
    case "PENDING":
      return UpstreamState.Pending({ progress: 0, answer })
    // DashScope reports no percentage while it works: progress stays where it was.
    case "RUNNING":
      return UpstreamState.Pending({ answer })
    case "SUCCEEDED": {
      const url = str(output?.video_url)
      const expiresAt = url === undefined ? undefined : expiryOf(url)
      return UpstreamState.Succeeded({
        results: url === undefined ? [] : [{ url, mimeType: "video/mp4", ...(expiresAt ? { expiresAt } : {}) }],
        answer,
        usage: usageIn(answer.usage),
        billed: true
      })
    }
    case "FAILED":
    case "CANCELED": {
      const code = str(output?.code) ?? status
      return UpstreamState.Failed({
        error: withUpstream(fromTaskFailure(str(output?.code)), { code, message: str(output?.message) }),
        answer,
        // A failed or cancelled task made no video, and DashScope bills none.
        billed: false
      })
    }
    default:
      return UpstreamState.Unknown({ answer })
  }
}
