import { Effect, Redacted } from "effect"
import {
  CallbackRefused,
  type CallbackRequest,
  type UpstreamCallbacks,
  verifyStandardWebhook
} from "../../src/channel/contract/Adapter.ts"
import { type Api, legacyId, type LegacyKind } from "./Requests.ts"

/**
 * Kling's status callbacks (docs/adapters/kling.md, Callbacks): the task
 * object, legacy (`task_id`, `task_info.external_task_id`) or current (`id`,
 * `external_id`), posted to `callback_url` on each status change. With
 * `credentials.webhook_secret` (the `whsec_…` secret of Kling's console) each
 * callback must carry a valid, fresh Standard Webhooks signature; without it
 * nothing proves a callback came from Kling. Either way it only names the task
 * to poll: the poll says what the task is.
 */

const LEGACY_KINDS: ReadonlyArray<LegacyKind> = ["text2video", "image2video", "omni-video"]

const str = (
  value: unknown
) => (typeof value === "string" && value.length > 0 && value.length <= 200 ? value : undefined)

const parse = (body: Uint8Array): any => {
  try {
    return JSON.parse(new TextDecoder().decode(body))
  } catch {
    return undefined
  }
}

export const klingCallbacks = (api: Api, secret: Redacted.Redacted<string> | undefined): UpstreamCallbacks => ({
  read: (request: CallbackRequest) =>
    Effect.gen(function*() {
      if (secret !== undefined) yield* verifyStandardWebhook(Redacted.value(secret), request)
      const parsed = parse(request.body)
      // Relays sometimes wrap it in the query envelope; the task is then its `data`.
      const task = parsed?.data !== undefined && typeof parsed.data === "object" ? parsed.data : parsed
      if (typeof task !== "object" || task === null) {
        return yield* new CallbackRefused({ reason: "not a Kling task object" })
      }
      const external = str(api === "legacy" ? task.task_info?.external_task_id : task.external_id)
      const id = str(api === "legacy" ? task.task_id : task.id)
      if (id === undefined && external === undefined) {
        return yield* new CallbackRefused({ reason: "not a Kling task object" })
      }
      return {
        // A legacy id is stored with its create endpoint, which the callback does not say: any of them matches.
        upstreamIds: id === undefined ? [] : api === "legacy" ? LEGACY_KINDS.map((kind) => legacyId(kind, id)) : [id],
        taskIds: external === undefined ? [] : [external]
      }
    })
})
