import { SqlClient } from "@effect/sql"
import { Clock, Context, Effect, Layer } from "effect"
import { AccountNotFound } from "../accounts/Errors.ts"
import { AppConfig } from "../platform/AppConfig.ts"
import { generateKey, hashKey } from "../platform/Keys.ts"
import { Secrets } from "../platform/Secrets.ts"
import { checkTargetUrl } from "../platform/TargetUrl.ts"
import { nowSeconds } from "../platform/Time.ts"
import { InvalidReplay, WebhookNotConfigured } from "./Errors.ts"
import { EVENTS_CHANNEL, Outbox } from "./Outbox.ts"
import { releaseHeld } from "./sql/releaseHeld.ts"
import type { ReplayRequest, WebhookRequest } from "./Webhook.ts"

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
      sql<{
        readonly webhook_url: string | null
        readonly webhook_key_enc: string | null
        readonly webhook_event_types: ReadonlyArray<string> | null
      }>`
        SELECT webhook_url, webhook_key_enc, webhook_event_types FROM accounts WHERE id = ${accountId}`,
      ([row]) => row === undefined ? Effect.fail(AccountNotFound.of(accountId)) : Effect.succeed(row)
    ).pipe(Effect.catchTag("SqlError", Effect.die))

  const setWebhook = (accountId: string, req: WebhookRequest) =>
    Effect.gen(function*() {
      yield* checkTargetUrl(req.url, config.allowPrivateTargets)
      const row = yield* getRow(accountId)
      const now = yield* nowSeconds
      const enabled = req.enabled ?? true
      // Left out: the subscription stays as it was; null: every type.
      const types = req.events === undefined ? row.webhook_event_types : req.events
      let key: string
      if (row.webhook_key_enc === null) {
        key = generateKey("webhook")
        const enc = yield* secrets.encrypt(key)
        const hash = yield* Effect.promise(() => hashKey(key))
        yield* sql`
          UPDATE accounts SET webhook_key_enc = ${enc}, webhook_key_hash = ${hash},
            webhook_key_version = webhook_key_version + 1
          WHERE id = ${accountId}`
      } else {
        key = yield* secrets.decrypt(row.webhook_key_enc)
      }
      // Enabled (again): what failing deliveries had disabled is forgotten, and the events held meanwhile go out.
      yield* sql`
        UPDATE accounts SET webhook_url = ${req.url}, webhook_enabled = ${enabled},
          webhook_event_types = ${types === null ? null : sql`${`{${types.join(",")}}`}::text[]`},
          webhook_failing_since = CASE WHEN ${enabled} THEN NULL ELSE webhook_failing_since END,
          webhook_disabled_reason = CASE WHEN ${enabled} THEN NULL ELSE webhook_disabled_reason END,
          webhook_disabled_at = CASE WHEN ${enabled} THEN NULL ELSE webhook_disabled_at END,
          updated_at = ${now}
        WHERE id = ${accountId}`
      const released = enabled ? yield* releaseHeld(sql, accountId) : 0
      if (released > 0) yield* Effect.ignore(sql`SELECT pg_notify(${EVENTS_CHANNEL}, ${accountId})`)
      return { url: req.url, enabled, key, events: types, disabled_reason: null, disabled_at: null }
    }).pipe(sql.withTransaction, Effect.catchTag("SqlError", Effect.die), Effect.withSpan("Webhooks.setWebhook"))

  /**
   * Sends the account's events created in `[from, to)` again (docs/webhooks.md, Replay): the same ids and
   * payloads, a full new round of attempts, whatever became of them (delivered, failed, skipped or held),
   * but for those its webhook does not subscribe to. How many were queued.
   */
  const replay = (accountId: string, req: ReplayRequest) =>
    Effect.gen(function*() {
      const row = yield* getRow(accountId)
      if (row.webhook_url === null) {
        return yield* new WebhookNotConfigured({ message: "Set a webhook URL before replaying events." })
      }
      if (req.to <= req.from) {
        return yield* new InvalidReplay({ message: "\"to\" must be after \"from\" (Unix seconds)." })
      }
      const now = yield* Clock.currentTimeMillis
      const rows = yield* sql`
        UPDATE webhook_events e SET status = 'pending', failures = 0, resent_from = e.attempts,
          next_attempt_at = ${now}, completed_at = NULL, lease_owner = NULL, lease_expires_at = NULL
        FROM accounts a
        WHERE a.id = e.account_id AND e.account_id = ${accountId}
          AND e.created_at >= ${req.from} AND e.created_at < ${req.to}
          AND e.status IN ('delivered', 'failed', 'skipped', 'held', 'filtered')
          AND (a.webhook_event_types IS NULL OR e.type = ANY (a.webhook_event_types) OR e.type = 'webhook.test')
        RETURNING e.id`
      if (rows.length > 0) yield* Effect.ignore(sql`SELECT pg_notify(${EVENTS_CHANNEL}, ${accountId})`)
      return { object: "webhook.replay.queued" as const, from: req.from, to: req.to, events: rows.length }
    }).pipe(Effect.catchTag("SqlError", Effect.die), Effect.withSpan("Webhooks.replay"))

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
      const [row] = yield* sql<{
        webhook_url: string | null
        webhook_enabled: boolean
        webhook_key_enc: string | null
        webhook_event_types: ReadonlyArray<string> | null
        webhook_disabled_reason: string | null
        webhook_disabled_at: number | null
      }>`
        SELECT webhook_url, webhook_enabled, webhook_key_enc, webhook_event_types, webhook_disabled_reason,
          webhook_disabled_at
        FROM accounts WHERE id = ${accountId}`
      if (row === undefined) return yield* AccountNotFound.of(accountId)
      const key = row.webhook_key_enc === null ? null : yield* secrets.decrypt(row.webhook_key_enc)
      return {
        url: row.webhook_url,
        enabled: row.webhook_enabled,
        key,
        events: row.webhook_event_types,
        disabled_reason: row.webhook_disabled_reason,
        disabled_at: row.webhook_disabled_at === null ? null : Number(row.webhook_disabled_at)
      }
    }).pipe(Effect.catchTag("SqlError", Effect.die), Effect.withSpan("Webhooks.get"))

  return { get, setWebhook, rotateWebhookKey, queueWebhookTest, replay } as const
})

export class Webhooks extends Context.Tag("Webhooks")<Webhooks, Effect.Effect.Success<typeof make>>() {
  static readonly layer = Layer.effect(Webhooks, make)
}
