import { Schema } from "effect"

/** The event types a webhook may subscribe to (docs/webhooks.md, Events); `webhook.test` always goes. */
export const SubscribableEvent = Schema.Literal(
  "video.task.succeeded",
  "video.task.failed",
  "image.task.succeeded",
  "image.task.failed",
  "account.balance_low"
)
export type SubscribableEvent = typeof SubscribableEvent.Type

/**
 * `PUT /admin/v1/accounts/{id}/webhook`: where an account's events go, whether they go now, and which
 * (`events`: the types wanted; null or left out, every type). Enabling a webhook that was disabled for
 * failing delivers the events held meanwhile.
 */
export const WebhookRequest = Schema.Struct({
  url: Schema.String.pipe(Schema.maxLength(2048)),
  enabled: Schema.optional(Schema.Boolean),
  events: Schema.optional(Schema.NullOr(Schema.Array(SubscribableEvent).pipe(Schema.minItems(1))))
})
export type WebhookRequest = typeof WebhookRequest.Type

/** An account's webhook as the operator set it, with the `wk-` key receivers verify calls by. */
export const WebhookSettings = Schema.Struct({
  url: Schema.String,
  enabled: Schema.Boolean,
  key: Schema.String,
  /** The event types it receives; null for every type. */
  events: Schema.NullOr(Schema.Array(Schema.String)),
  /** Why it was disabled by the service (deliveries failing), and when (Unix seconds); null otherwise. */
  disabled_reason: Schema.NullOr(Schema.String),
  disabled_at: Schema.NullOr(Schema.Number)
})

/** `POST /admin/v1/accounts/{id}/webhook/replay`: the events created in `[from, to)` (Unix seconds) sent again. */
export const ReplayRequest = Schema.Struct({
  from: Schema.Int.pipe(Schema.nonNegative()),
  to: Schema.Int.pipe(Schema.nonNegative())
})
export type ReplayRequest = typeof ReplayRequest.Type

export const ReplayQueued = Schema.Struct({
  object: Schema.Literal("webhook.replay.queued"),
  from: Schema.Number,
  to: Schema.Number,
  events: Schema.Number
})
