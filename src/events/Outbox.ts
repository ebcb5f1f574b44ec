import { SqlClient } from "@effect/sql"
import { Clock, Context, Effect, Layer } from "effect"
import { IdPrefix, newId } from "../platform/Ids.ts"
import { type EventType, makeEvent } from "./Event.ts"

/** The NOTIFY channel an outbox write signals on, so idle delivery workers look at once. */
export const EVENTS_CHANNEL = "webhook_events"

/**
 * The transactional outbox: an event is written in the transaction that
 * changes what it reports, so a crash can lose neither the change nor its
 * event. Delivery reads the rows later (`WebhookDeliveries`, the delivery worker). An
 * account without an enabled webhook gets its events recorded as `skipped`,
 * which keeps the history; `always` (the admin's `webhook.test`) queues the
 * event whenever a URL is set, enabled or not.
 */
export class Outbox extends Context.Tag("Outbox")<Outbox, {
  readonly record: (
    accountId: string,
    type: EventType,
    object: unknown,
    taskId: string | null,
    options?: { readonly always?: boolean }
  ) => Effect.Effect<string>
}>() {
  static readonly layer = Layer.effect(
    Outbox,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      return {
        record: (accountId, type, object, taskId, options) =>
          Effect.gen(function*() {
            const id = newId(IdPrefix.event)
            const nowMs = yield* Clock.currentTimeMillis
            const now = Math.floor(nowMs / 1000)
            const [account] = yield* sql<{ deliver: boolean }>`
              SELECT (webhook_url IS NOT NULL AND (webhook_enabled OR ${options?.always === true})) AS deliver
              FROM accounts WHERE id = ${accountId}`
            // json, not jsonb: the text is kept as written, so every attempt sends these bytes.
            yield* sql`
              INSERT INTO webhook_events (id, account_id, task_id, type, payload, status, next_attempt_at, created_at)
              VALUES (${id}, ${accountId}, ${taskId}, ${type}, ${
              JSON.stringify(makeEvent(id, type, now, object))
            }::json,
                ${account?.deliver ? "pending" : "skipped"}, ${nowMs}, ${now})`
            // Inside a transaction the notification goes out at commit, when the row is visible.
            if (account?.deliver) yield* sql`SELECT pg_notify(${EVENTS_CHANNEL}, ${id})`
            return id
          }).pipe(Effect.orDie, Effect.withSpan("Outbox.record", { attributes: { "event.type": type } }))
      }
    })
  )
}
