import { HttpServerRequest } from "@effect/platform"
import { Effect, Schema } from "effect"
import * as Errors from "../api/Errors.ts"
import { WebhookEventStatus } from "../domain/Webhook.ts"
import type { EventFilter } from "../services/Webhooks.ts"
import { formatParseError } from "./Body.ts"

/** Query of `GET /admin/v1/accounts/{id}/webhook/events`; unknown or repeated parameters are refused. */
const EventParams = Schema.Struct({
  status: Schema.optional(WebhookEventStatus),
  after: Schema.optional(Schema.String.pipe(Schema.minLength(1))),
  limit: Schema.optionalWith(Schema.NumberFromString.pipe(Schema.int(), Schema.between(1, 100)), { default: () => 20 })
})

export const readEventFilter = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  const record: Record<string, string> = {}
  for (const [key, value] of new URL(request.url, "http://local").searchParams) {
    if (key in record) return yield* Errors.badRequest("invalid_request", `Query parameter "${key}" is repeated.`)
    record[key] = value
  }
  const p = yield* Schema.decodeUnknown(EventParams, { onExcessProperty: "error", errors: "all" })(record).pipe(
    Effect.mapError((e) => Errors.badRequest("invalid_request", `Invalid query: ${formatParseError(e)}`))
  )
  return { status: p.status, after: p.after, limit: p.limit } satisfies EventFilter
})
