import { Effect } from "effect"
import { CallbackRefused, type CallbackRequest, type UpstreamCallbacks } from "../../src/channel/contract/Adapter.ts"
import { isGenerationId } from "./Requests.ts"

/**
 * Luma's callbacks (docs/adapters/luma.md, Callbacks): with `"callbacks":
 * true` each create carries `callback_url`, and Luma POSTs the generation
 * object there when it is dreaming, completed or failed. Luma signs nothing,
 * so a callback proves nothing about its sender: it only names the
 * generation (its `id`) to poll now, and the poll with the channel's key
 * says what the generation is. A body that is not a generation object is
 * refused, nothing polled.
 */

const parse = (body: Uint8Array): unknown => {
  try {
    return JSON.parse(new TextDecoder().decode(body))
  } catch {
    return undefined
  }
}

export const lumaCallbacks: UpstreamCallbacks = {
  read: (request: CallbackRequest) =>
    Effect.gen(function*() {
      const generation = parse(request.body) as { id?: unknown; state?: unknown } | undefined
      const id = typeof generation === "object" && generation !== null ? generation.id : undefined
      if (typeof id !== "string" || !isGenerationId(id) || typeof generation?.state !== "string") {
        return yield* new CallbackRefused({ reason: "not a Luma generation object" })
      }
      return { upstreamIds: [id], taskIds: [] }
    })
}
