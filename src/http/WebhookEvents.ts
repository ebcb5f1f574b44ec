import { Effect, Schema } from "effect"
import { WebhookEventStatus } from "../domain/Webhook.ts"
import type { EventFilter } from "../services/Webhooks.ts"
import { readQuery } from "./Query.ts"

/** Query of `GET /admin/v1/accounts/{id}/webhook/events`; unknown or repeated parameters are refused. */
const EventParams = Schema.Struct({
  status: Schema.optional(WebhookEventStatus),
  after: Schema.optional(Schema.String.pipe(Schema.minLength(1))),
  limit: Schema.optionalWith(Schema.NumberFromString.pipe(Schema.int(), Schema.between(1, 100)), { default: () => 20 })
})

export const readEventFilter = Effect.map(readQuery(EventParams), (p) => ({ status: p.status, after: p.after, limit: p.limit } satisfies EventFilter))
