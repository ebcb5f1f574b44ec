import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer } from "effect"
import { type EventType, makeEvent } from "../domain/Event.ts"
import { IdPrefix, newId } from "../domain/Ids.ts"
import { nowSeconds } from "../domain/Time.ts"

/**
 * The transactional outbox: an event is written in the transaction that
 * changes what it reports, so a crash can lose neither the change nor its
 * event. Delivery reads the rows later. An account without an enabled
 * webhook gets its events recorded as `skipped`, which keeps the history.
 */
export class Outbox extends Context.Tag("Outbox")<Outbox, {
  readonly record: (accountId: string, type: EventType, object: unknown, taskId: string | null) => Effect.Effect<string>
}>() {
  static readonly layer = Layer.effect(
    Outbox,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      return {
        record: (accountId, type, object, taskId) =>
          Effect.gen(function*() {
            const id = newId(IdPrefix.event)
            const now = yield* nowSeconds
            const [account] = yield* sql<{ deliver: boolean }>`
              SELECT (webhook_enabled AND webhook_url IS NOT NULL) AS deliver FROM accounts WHERE id = ${accountId}`
            yield* sql`
              INSERT INTO webhook_events (id, account_id, task_id, type, payload, status, next_attempt_at, created_at)
              VALUES (${id}, ${accountId}, ${taskId}, ${type}, ${JSON.stringify(makeEvent(id, type, now, object))}::jsonb,
                ${account?.deliver ? "pending" : "skipped"}, ${now}, ${now})`
            return id
          }).pipe(Effect.orDie, Effect.withSpan("Outbox.record", { attributes: { "event.type": type } }))
      }
    })
  )
}
