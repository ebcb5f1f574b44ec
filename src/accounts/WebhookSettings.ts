import type { SqlClient } from "@effect/sql"
import { type Context, Effect } from "effect"
import type { Outbox } from "../events/Outbox.ts"
import { generateKey, hashKey } from "../platform/Keys.ts"
import type { Secrets } from "../platform/Secrets.ts"
import { checkTargetUrl } from "../platform/TargetUrl.ts"
import { nowSeconds } from "../platform/Time.ts"
import type { WebhookRequest } from "./Account.ts"
import type { AccountNotFound } from "./Errors.ts"
import { InvalidAccountRequest } from "./Errors.ts"

/**
 * An account's webhook settings (part of the Accounts service): the URL and
 * its switch, the `wk-` key (kept encrypted: the service must send it; a new
 * version on every rotation, so the old key stops at once), and the
 * `webhook.test` event.
 */
export const makeWebhookSettings = (deps: {
  readonly sql: SqlClient.SqlClient
  readonly secrets: Context.Tag.Service<typeof Secrets>
  readonly outbox: Context.Tag.Service<typeof Outbox>
  readonly getRow: (id: string) => Effect.Effect<
    { readonly webhook_url: string | null; readonly webhook_key_enc: string | null },
    AccountNotFound
  >
  readonly allowPrivateTargets: boolean
}) => {
  const { getRow, outbox, secrets, sql } = deps
  const setWebhook = (accountId: string, req: WebhookRequest) =>
    Effect.gen(function*() {
      yield* checkTargetUrl(req.url, deps.allowPrivateTargets)
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
    }).pipe(Effect.catchTag("SqlError", Effect.die), Effect.withSpan("Accounts.setWebhook"))

  const rotateWebhookKey = (accountId: string) =>
    Effect.gen(function*() {
      const row = yield* getRow(accountId)
      if (row.webhook_url === null) {
        return yield* new InvalidAccountRequest({
          code: "webhook_not_configured",
          message: "Set a webhook URL before rotating its key."
        })
      }
      const key = generateKey("webhook")
      const enc = yield* secrets.encrypt(key)
      const hash = yield* Effect.promise(() => hashKey(key))
      const now = yield* nowSeconds
      yield* sql`
        UPDATE accounts SET webhook_key_enc = ${enc}, webhook_key_hash = ${hash}, webhook_key_version = webhook_key_version + 1, updated_at = ${now}
        WHERE id = ${accountId}`
      return { key }
    }).pipe(Effect.catchTag("SqlError", Effect.die), Effect.withSpan("Accounts.rotateWebhookKey"))

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
        return yield* new InvalidAccountRequest({
          code: "webhook_not_configured",
          message: "Set a webhook URL before sending a test event."
        })
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
    }).pipe(Effect.withSpan("Accounts.queueWebhookTest"))

  return { setWebhook, rotateWebhookKey, queueWebhookTest } as const
}
