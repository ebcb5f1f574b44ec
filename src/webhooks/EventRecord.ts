import { Schema } from "effect"

/** The wire shapes of an account's webhook event history (`GET /admin/v1/accounts/{id}/webhook/events`). */

/** One attempt as the admin API shows it (times in Unix seconds). */
export const WebhookAttempt = Schema.Struct({
  attempt: Schema.Number,
  started_at: Schema.Number,
  outcome: Schema.Literal("sending", "delivered", "failed", "interrupted"),
  status_code: Schema.NullOr(Schema.Number),
  error: Schema.NullOr(Schema.String),
  duration_ms: Schema.NullOr(Schema.Number),
  url: Schema.NullOr(Schema.String)
})

/**
 * `skipped`: no webhook was enabled; `filtered`: the webhook does not subscribe to its type; `held`: the
 * webhook was disabled for failing, the event waits to be delivered when it is enabled again.
 */
export const WebhookEventStatus = Schema.Literal("pending", "delivered", "failed", "skipped", "filtered", "held")

/** An outbox event with its delivery history (admin API). */
export const WebhookEventRecord = Schema.Struct({
  id: Schema.String,
  object: Schema.Literal("webhook.event"),
  type: Schema.String,
  task_id: Schema.NullOr(Schema.String),
  status: WebhookEventStatus,
  created_at: Schema.Number,
  completed_at: Schema.NullOr(Schema.Number),
  next_attempt_at: Schema.NullOr(Schema.Number),
  attempts: Schema.Array(WebhookAttempt)
})

export const WebhookEventList = Schema.Struct({
  object: Schema.Literal("list"),
  data: Schema.Array(WebhookEventRecord),
  has_more: Schema.Boolean,
  first_id: Schema.NullOr(Schema.String),
  last_id: Schema.NullOr(Schema.String)
})
