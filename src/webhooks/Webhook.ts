import { Schema } from "effect"

/** `PUT /admin/v1/accounts/{id}/webhook`: where an account's events go, and whether they go now. */
export const WebhookRequest = Schema.Struct({
  url: Schema.String.pipe(Schema.maxLength(2048)),
  enabled: Schema.optional(Schema.Boolean)
})
export type WebhookRequest = typeof WebhookRequest.Type

/** An account's webhook as the operator set it, with the `wk-` key receivers verify calls by. */
export const WebhookSettings = Schema.Struct({
  url: Schema.String,
  enabled: Schema.Boolean,
  key: Schema.String
})
