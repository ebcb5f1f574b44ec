import { type Charge, UpstreamState, usageOf, withUpstream } from "../../src/channel/contract/Adapter.ts"
import { failedUpstream, isSafety, resultExpired, unsafe } from "./Failures.ts"

/**
 * An OpenRouter video job (`VideoGenerationResponse`) as a normalised state
 * (docs/adapters/openrouter.md, States). The statuses are the official
 * client's: `pending` and `in_progress` wait; `completed` is fetched through
 * the content endpoint with the channel's key; `failed`, `cancelled` and
 * `expired` end the task with its refund. The enum is open (the client keeps
 * a word it does not know), so any other word, or none, is Unknown: polled
 * again until the deadline.
 */

export interface Job {
  readonly id?: unknown
  readonly status?: unknown
  readonly error?: unknown
  readonly generation_id?: unknown
  readonly unsigned_urls?: unknown
  readonly usage?: { readonly cost?: unknown; readonly is_byok?: unknown } | null
}

/**
 * What OpenRouter charges for a job (docs/adapters/openrouter.md, Usage and
 * billing): `usage.cost`, in US dollars, once the job completed. No unit of
 * ours counts dollars, so the job is counted as one task with the dollars
 * (and whether the operator's own provider key paid, `is_byok`) beside it for
 * operators; a route priced per second is priced on the stored video's
 * seconds. A completed job is billed, and an expired one (it was made); a
 * failed or cancelled one only where its answer reports a cost above zero.
 */
export const chargeOf = (job: Job, status: string): Charge => {
  const cost = typeof job.usage?.cost === "number" ? job.usage.cost : undefined
  const fields = {
    ...(cost === undefined ? {} : { cost_usd: cost }),
    ...(typeof job.usage?.is_byok === "boolean" ? { is_byok: job.usage.is_byok } : {}),
    ...(typeof job.generation_id === "string" ? { generation_id: job.generation_id } : {})
  }
  const usage = Object.keys(fields).length === 0 ? undefined : usageOf("task", 1, fields)
  const billed = status === "completed" || status === "expired" || (cost !== undefined && cost > 0)
  return { usage, billed }
}

export const stateOf = (job: Job, contentUrl: string): UpstreamState => {
  const status = typeof job.status === "string" ? job.status : undefined
  switch (status) {
    case "pending":
      return UpstreamState.Pending({ progress: 0, answer: job })
    // OpenRouter reports no percentage: the task's progress stays where it was.
    case "in_progress":
      return UpstreamState.Pending({ answer: job })
    case "completed":
      // One video per job: the bytes are behind the content endpoint, with the channel's key.
      return UpstreamState.Succeeded({
        results: [{ url: contentUrl, mimeType: "video/mp4", auth: "api_key" }],
        answer: job,
        ...chargeOf(job, status)
      })
    case "failed":
    case "cancelled":
    case "expired": {
      const error = status === "expired"
        ? resultExpired()
        : status === "failed" && isSafety(job.error)
        ? unsafe()
        : failedUpstream()
      return UpstreamState.Failed({
        error: withUpstream(error, { code: status, message: typeof job.error === "string" ? job.error : undefined }),
        answer: job,
        ...chargeOf(job, status)
      })
    }
    default:
      return UpstreamState.Unknown({ answer: job })
  }
}
