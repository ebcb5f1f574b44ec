import { type ListedTask, UpstreamState, usageOf, withUpstream } from "../../src/channel/contract/Adapter.ts"
import { fromFailureReason } from "./Failures.ts"

/**
 * Luma's generation object as a normalised state (docs/adapters/luma.md,
 * States): `state` is `queued`, `dreaming`, `completed` or `failed`
 * (Luma's API reference, `State`); a completed generation's video is at
 * `assets.video`, a failed one says why in `failure_reason`.
 */

export interface Generation {
  readonly id?: unknown
  readonly state?: unknown
  readonly failure_reason?: unknown
  readonly created_at?: unknown
  readonly model?: unknown
  readonly assets?: { readonly video?: unknown } | null
  readonly request?: { readonly duration?: unknown; readonly resolution?: unknown; readonly model?: unknown } | null
}

const str = (value: unknown) => (typeof value === "string" && value !== "" ? value : undefined)

/**
 * What Luma bills a video by (docs/adapters/luma.md, Usage and billing): its
 * seconds, as the request it keeps says them (`"5s"`), at its resolution.
 */
export const usageIn = (generation: Generation) => {
  const duration = str(generation.request?.duration)
  const seconds = duration === undefined ? undefined : /^(\d+)s$/.exec(duration)?.[1]
  return usageOf("second", seconds, {
    duration,
    ...(str(generation.request?.resolution) === undefined ? {} : { resolution: generation.request!.resolution })
  })
}

export const stateOf = (generation: Generation): UpstreamState => {
  switch (str(generation.state)) {
    case "queued":
      return UpstreamState.Pending({ progress: 0, answer: generation })
    // Luma reports no percentage: progress stays where it was.
    case "dreaming":
      return UpstreamState.Pending({ answer: generation })
    case "completed": {
      const video = str(generation.assets?.video)
      return UpstreamState.Succeeded({
        // No video is "done but no output", which the engine fails with its refund.
        results: video !== undefined && /^https?:\/\//.test(video) ? [{ url: video, mimeType: "video/mp4" }] : [],
        answer: generation,
        usage: usageIn(generation),
        billed: true
      })
    }
    case "failed": {
      const reason = str(generation.failure_reason)
      return UpstreamState.Failed({
        error: withUpstream(fromFailureReason(reason), { code: "failed", message: reason?.slice(0, 500) }),
        answer: generation,
        // Luma pre-charges a generation and refunds it in full when it fails (its FAQ).
        usage: usageIn(generation),
        billed: false
      })
    }
    default:
      return UpstreamState.Unknown({ answer: generation })
  }
}

/** One generation of Luma's list as its record of a task; undefined for one that is not a video generation of ours. */
export const listedOf = (generation: Generation): ListedTask | undefined => {
  const id = str(generation.id)
  const created = Date.parse(str(generation.created_at) ?? "")
  if (id === undefined || Number.isNaN(created)) return undefined
  const state = str(generation.state)
  const model = str(generation.model) ?? str(generation.request?.model)
  return {
    upstreamId: id,
    createdAt: created,
    ...(model === undefined ? {} : { model }),
    ...(state === undefined ? {} : { status: state }),
    ...(state === "completed" ? { billed: true, usage: usageIn(generation) } : {}),
    ...(state === "failed" ? { billed: false } : {})
  }
}
