import { Effect } from "effect"
import { CallbackRefused, type CallbackRequest, type UpstreamCallbacks } from "../../src/channel/contract/Adapter.ts"

/**
 * Ark's status callbacks (docs/adapters/ark.md, Callbacks): a POST of the task
 * object to `callback_url` on each status change. Ark documents no signature,
 * so nothing proves a callback came from Ark: it only names the task to poll,
 * and the poll (with our key) says what the task is. A body that is not a task
 * object is refused.
 */
export const arkCallbacks: UpstreamCallbacks = {
  read: (request: CallbackRequest) =>
    Effect.gen(function*() {
      let task: unknown
      try {
        task = JSON.parse(new TextDecoder().decode(request.body))
      } catch {
        return yield* new CallbackRefused({ reason: "the body is not JSON" })
      }
      const id = (task as { id?: unknown } | null)?.id
      if (typeof id !== "string" || id.length === 0 || id.length > 200) {
        return yield* new CallbackRefused({ reason: "not an Ark task object" })
      }
      return { upstreamIds: [id], taskIds: [] }
    })
}
