import { Effect, Schema } from "effect"
import { Limit, readQuery } from "../platform/http/ListQuery.ts"
import type { EventFilter } from "./EventHistory.ts"
import { WebhookEventStatus } from "./EventRecord.ts"

/** Query of `GET /admin/v1/accounts/{id}/webhook/events`; unknown or repeated parameters are refused. */
const EventParams = Schema.Struct({
  status: Schema.optional(WebhookEventStatus),
  after: Schema.optional(Schema.String.pipe(Schema.minLength(1))),
  limit: Limit
})

export const readEventFilter = Effect.map(
  readQuery(EventParams),
  (p) => ({ status: p.status, after: p.after, limit: p.limit } satisfies EventFilter)
)
