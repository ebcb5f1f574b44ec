import { Effect } from "effect"
import { CallbackRefused, type CallbackRequest, type UpstreamCallbacks } from "../../src/channel/contract/Adapter.ts"

/**
 * MiniMax's `callback_url` (docs/adapters/minimax.md, Callbacks). MiniMax
 * first POSTs a verification request, `{ "challenge": "…" }`, which the
 * receiver must answer within 3 seconds with the same value,
 * `{ "challenge": "…" }`; only then does it post status updates, each shaped
 * as a query answer (`task_id`, `status`, `file_id`, `base_resp`). MiniMax
 * signs nothing, so an update only names the task to poll now: the poll
 * says what the task is, and a forged update moves a poll earlier, no more.
 * The challenge is echoed as it came (JSON-encoded, never as markup), and
 * names no task.
 */

/** Far above any challenge MiniMax sends: we echo no more than this. */
const MAX_CHALLENGE = 1024

const parse = (body: Uint8Array): unknown => {
  try {
    return JSON.parse(new TextDecoder().decode(body))
  } catch {
    return undefined
  }
}

const str = (value: unknown, max: number) =>
  typeof value === "string" && value.length > 0 && value.length <= max ? value : undefined

export const minimaxCallbacks: UpstreamCallbacks = {
  read: (request: CallbackRequest) =>
    Effect.suspend(() => {
      const parsed = parse(request.body)
      if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
        return Effect.fail(new CallbackRefused({ reason: "not a MiniMax callback (not a JSON object)" }))
      }
      const body = parsed as { readonly challenge?: unknown; readonly task_id?: unknown }
      // The verification request: the docs' receiver looks at `challenge` first, and so do we.
      if (body.challenge !== undefined) {
        // A string as the docs show it; a number is echoed as it came too.
        const challenge = typeof body.challenge === "number" && Number.isFinite(body.challenge)
          ? body.challenge
          : str(body.challenge, MAX_CHALLENGE)
        if (challenge === undefined) {
          return Effect.fail(new CallbackRefused({ reason: "a MiniMax challenge that is not a short string" }))
        }
        return Effect.succeed({ upstreamIds: [], taskIds: [], answer: { json: { challenge } } })
      }
      const taskId = str(body.task_id, 200)
      if (taskId === undefined) {
        return Effect.fail(new CallbackRefused({ reason: "not a MiniMax callback (neither challenge nor task_id)" }))
      }
      return Effect.succeed({ upstreamIds: [taskId], taskIds: [] })
    })
}
