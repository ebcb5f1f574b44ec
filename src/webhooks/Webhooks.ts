import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer } from "effect"
import { AccountNotFound } from "../accounts/Errors.ts"
import { AppConfig } from "../platform/AppConfig.ts"
import { generateKey, hashKey } from "../platform/Keys.ts"
import { Secrets } from "../platform/Secrets.ts"
import { checkTargetUrl } from "../platform/TargetUrl.ts"
import { nowSeconds } from "../platform/Time.ts"
import { WebhookNotConfigured } from "./Errors.ts"
import { Outbox } from "./Outbox.ts"
import type { WebhookRequest } from "./Webhook.ts"

/**
 * An account's webhook settings: the URL and its switch, the `wk-` key (kept
 * encrypted, since the service must send it; a new version on every
 * rotation, so the old key stops at once), and the `webhook.test` event.
 * The webhooks feature owns them with the outbox and the delivery; they are
 * columns of the account's row.
 */
const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const secrets = yield* Secrets
  const outbox = yield* Outbox
  const config = yield* AppConfig

  const getRow = (accountId: string) =>
    Effect.flatMap(
      sql<{ readonly webhook_url: string | null; readonly webhook_key_enc: string | null }>`
        SELECT webhook_url, webhook_key_enc FROM accounts WHERE id = ${accountId}`,
      ([row]) => row === undefined ? Effect.fail(AccountNotFound.of(accountId)) : Effect.succeed(row)
    ).pipe(Effect.catchTag("SqlError", Effect.die))

  const setWebhook = (accountId: string, req: WebhookRequest) =>
    Effect.gen(function*() {
      yield* checkTargetUrl(req.url, config.allowPrivateTargets)
      const row = yield* getRow(accountId)
      const now = yield* nowSeconds
      const enabled = req.enabled ?? true
      if (row.webhook_key_enc === null) {
        const key = generateKey("webhook")
        const enc = yield* secrets.encrypt(key)
        const hash = yield* Effect.promise(() => hashKey(key))
        yield* sql`
          UPDATE accounts SET webhook_url = ${req.url}, webhook_enabled = ${enabled}, webhook_key_enc = ${enc},
            webhook_key_hash = ${hash}, webhook_key_version = webhook_key_version + 1, updated_at = ${now}
          WHERE id = ${accountId}`
        return { url: req.url, enabled, key }
      }
      yield* sql`
        UPDATE accounts SET webhook_url = ${req.url}, webhook_enabled = ${enabled}, updated_at = ${now}
        WHERE id = ${accountId}`
      return { url: req.url, enabled, key: yield* secrets.decrypt(row.webhook_key_enc) }
    }).pipe(Effect.catchTag("SqlError", Effect.die), Effect.withSpan("Webhooks.setWebhook"))

  const rotateWebhookKey = (accountId: string) =>
    Effect.gen(function*() {
      const row = yield* getRow(accountId)
      if (row.webhook_url === null) {
        return yield* new WebhookNotConfigured({ message: "Set a webhook URL before rotating its key." })
      }
      const key = generateKey("webhook")
      const enc = yield* secrets.encrypt(key)
      const hash = yield* Effect.promise(() => hashKey(key))
      const now = yield* nowSeconds
      yield* sql`
        UPDATE accounts SET webhook_key_enc = ${enc}, webhook_key_hash = ${hash}, webhook_key_version = webhook_key_version + 1, updated_at = ${now}
        WHERE id = ${accountId}`
      return { key }
    }).pipe(Effect.catchTag("SqlError", Effect.die), Effect.withSpan("Webhooks.rotateWebhookKey"))

  /**
   * Queues a `webhook.test` event (its payload: docs/webhooks.md, Events) in
   * the outbox, delivered like any other event. It goes out whenever a URL is
   * set, enabled or not, so an operator can check the receiver before enabling
   * it.
   */
  const queueWebhookTest = (accountId: string) =>
    Effect.gen(function*() {
      const row = yield* getRow(accountId)
      if (row.webhook_url === null) {
        return yield* new WebhookNotConfigured({ message: "Set a webhook URL before sending a test event." })
      }
      const event = yield* outbox.record(
        accountId,
        "webhook.test",
        { object: "webhook.test", account_id: accountId },
        null,
        { always: true }
      )
      yield* outbox.announce(event)
      return { object: "webhook.test.queued" as const, event_id: event.id }
    }).pipe(Effect.withSpan("Webhooks.queueWebhookTest"))

  /** The account's webhook as its owner sees it in the console: URL, switch and the `wk-` key (none before a URL is set). */
  const get = (accountId: string) =>
    Effect.gen(function*() {
      const [row] = yield* sql<
        { webhook_url: string | null; webhook_enabled: boolean; webhook_key_enc: string | null }
      >`
        SELECT webhook_url, webhook_enabled, webhook_key_enc FROM accounts WHERE id = ${accountId}`
      if (row === undefined) return yield* AccountNotFound.of(accountId)
      const key = row.webhook_key_enc === null ? null : yield* secrets.decrypt(row.webhook_key_enc)
      return { url: row.webhook_url, enabled: row.webhook_enabled, key }
    }).pipe(Effect.catchTag("SqlError", Effect.die), Effect.withSpan("Webhooks.get"))

  return { get, setWebhook, rotateWebhookKey, queueWebhookTest } as const
})

export class Webhooks extends Context.Tag("Webhooks")<Webhooks, Effect.Effect.Success<typeof make>>() {
  static readonly layer = Layer.effect(Webhooks, make)
}
