import { SqlClient } from "@effect/sql"
import { Clock, Context, Effect, Layer } from "effect"
import { IdPrefix, newId } from "../platform/Ids.ts"
import { type EventType, makeEvent } from "./Event.ts"

/** The NOTIFY channel an outbox write signals on, so idle delivery workers look at once. */
export const EVENTS_CHANNEL = "webhook_events"

/** An event written to the outbox, and whether it waits for delivery (the account has a webhook). */
export interface RecordedEvent {
  readonly id: string
  readonly deliver: boolean
}

/**
 * The transactional outbox: an event is written in the transaction that
 * changes what it reports, so a crash can lose neither the change nor its
 * event. Delivery reads the rows later (`WebhookDeliveries`, the delivery worker). An
 * account without an enabled webhook gets its events recorded as `skipped`,
 * one its webhook does not subscribe to as `filtered`, and while its webhook
 * is disabled for failing as `held` (delivered once it is enabled again),
 * which keeps the history; `always` (the admin's `webhook.test`) queues the
 * event whenever a URL is set, enabled or not.
 *
 * The wake-up of idle delivery workers (`announce`) is sent by the caller
 * after its transaction commits, not inside it: PostgreSQL serialises the
 * commits of all transactions that NOTIFY behind one global lock, which
 * would make every task outcome wait for every other. A wake-up lost to a
 * crash after the commit only delays delivery: the workers also poll.
 */
export class Outbox extends Context.Tag("Outbox")<Outbox, {
  readonly record: (
    accountId: string,
    type: EventType,
    object: unknown,
    taskId: string | null,
    options?: { readonly always?: boolean }
  ) => Effect.Effect<RecordedEvent>
  /** Wakes idle delivery workers for a committed event; a hint, so a failure is only logged. */
  readonly announce: (event: RecordedEvent) => Effect.Effect<void>
}>() {
  static readonly layer = Layer.effect(
    Outbox,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      return {
        record: (accountId, type, object, taskId, options) =>
          Effect.gen(function*() {
            const always = options?.always === true
            const id = newId(IdPrefix.event)
            const nowMs = yield* Clock.currentTimeMillis
            const now = Math.floor(nowMs / 1000)
            // Where the event goes (docs/webhooks.md, Delivery): out (`pending`), nowhere (`skipped`: no webhook
            // enabled), nowhere by the webhook's wish (`filtered`), or kept for later (`held`: the webhook was
            // disabled for failing). A test event goes whenever a URL is set.
            const [account] = yield* sql<{ status: "pending" | "skipped" | "filtered" | "held" }>`
              SELECT CASE
                WHEN webhook_url IS NULL THEN 'skipped'
                WHEN ${always}::boolean THEN 'pending'
                WHEN webhook_event_types IS NOT NULL AND NOT (${type}::text = ANY (webhook_event_types)) THEN 'filtered'
                WHEN webhook_enabled THEN 'pending'
                WHEN webhook_disabled_reason IS NOT NULL THEN 'held'
                ELSE 'skipped' END AS status
              FROM accounts WHERE id = ${accountId}`
            const status = account?.status ?? "skipped"
            // json, not jsonb: the text is kept as written, so every attempt sends these bytes.
            yield* sql`
              INSERT INTO webhook_events (id, account_id, task_id, type, payload, status, next_attempt_at, created_at)
              VALUES (${id}, ${accountId}, ${taskId}, ${type}, ${
              JSON.stringify(makeEvent(id, type, now, object))
            }::json,
                ${status}, ${nowMs}, ${now})`
            return { id, deliver: status === "pending" }
          }).pipe(Effect.orDie, Effect.withSpan("Outbox.record", { attributes: { "event.type": type } })),
        announce: (event) =>
          event.deliver
            ? sql`SELECT pg_notify(${EVENTS_CHANNEL}, ${event.id})`.pipe(
              Effect.asVoid,
              Effect.catchAllCause((cause) =>
                Effect.logWarning("could not wake the delivery workers; they will find the event by polling", cause)
              )
            )
            : Effect.void
      }
    })
  )
}
