import { SqlClient } from "@effect/sql"
import { Clock, Config, Context, Effect, Layer, Option } from "effect"
import { AppConfig } from "../platform/AppConfig.ts"
import { makeListen } from "../platform/Notifications.ts"
import { Secrets } from "../platform/Secrets.ts"
import { nextAttemptAt, retryPolicy } from "./DeliveryRules.ts"
import { type EventFilter, listEventHistory } from "./EventHistory.ts"
import { EVENTS_CHANNEL } from "./Outbox.ts"

/**
 * The delivery side of the outbox (docs/webhooks.md, Delivery). An event row in
 * `pending` is a delivery job; its schedule (`next_attempt_at`, ms) lives in
 * the database, so a restart or another replica carries it on.
 *
 * - claim: due, unleased rows are taken with `FOR UPDATE SKIP LOCKED`; the
 *   same statement sequence numbers the attempt and starts a lease, and an
 *   attempt row (`sending`) is written, all in one transaction. Two workers
 *   never hold one event, so no attempt is sent twice.
 * - record: the attempt's outcome and the event's next state in one
 *   transaction, guarded by the attempt number and the lease owner.
 * - a sender that dies leaves its lease to expire; the next claim marks that
 *   attempt `interrupted` and sends again with the same event id (at least
 *   once: the receiver may have had it). Interrupted attempts do not count
 *   against `WEBHOOK_MAX_ATTEMPTS` (their outcome is unknown), but an event
 *   interrupted that many times fails, so a crash loop ends.
 */

/** What a worker holds after a claim. */
export interface Delivery {
  readonly eventId: string
  readonly accountId: string
  readonly type: string
  readonly taskId: string | null
  readonly attempt: number
  readonly failures: number
  readonly payload: unknown
  readonly traceparent: string | null
}

/** How an attempt ended; `delivered` only for a 2xx answer. */
export interface AttemptOutcome {
  readonly url: string | null
  readonly delivered: boolean
  readonly statusCode: number | null
  readonly error: string | null
  readonly durationMs: number
}

/** Where and with which key an attempt goes, read when it is sent (a rotated key applies at once). */
export interface Receiver {
  readonly url: string
  readonly key: string
}

/** Lease beyond the request time-out: the time to read the key, sign and record the outcome. */
const LEASE_MARGIN_MS = 5_000

interface ClaimRow {
  readonly id: string
  readonly account_id: string
  readonly task_id: string | null
  readonly type: string
  readonly attempts: number
  readonly failures: number
  readonly resent_from: number
  readonly lease_owner: string | null
  readonly webhook_url: string | null
  readonly webhook_enabled: boolean
  readonly webhook_disabled_reason: string | null
}

const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const config = yield* AppConfig
  const secrets = yield* Secrets
  const listen = yield* makeListen
  const { maxAttempts, timeoutS } = config.webhook
  const disableAfterMs = config.webhook.disableAfterS * 1000
  const policy = retryPolicy(config.webhook)
  /**
   * Test hook, for the crash tests only (test/webhooks/webhooks-process.test.ts): a
   * pause between the receiver's answer and recording it, so a test can kill
   * the process in exactly that gap. The lease covers it, as it would cover a
   * slow database. Unset (0) in every real deployment.
   */
  const recordDelayMs = yield* Config.withDefault(Config.integer("WEBHOOK_TEST_RECORD_DELAY_MS"), 0).pipe(Effect.orDie)
  const leaseMs = Math.ceil(timeoutS * 1000) + LEASE_MARGIN_MS + recordDelayMs

  const claim = (workerId: string, limit: number) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const rows = yield* sql<ClaimRow>`
        SELECT e.id, e.account_id, e.task_id, e.type, e.attempts, e.failures, e.resent_from, e.lease_owner,
          a.webhook_url, a.webhook_enabled, a.webhook_disabled_reason
        FROM webhook_events e JOIN accounts a ON a.id = e.account_id
        WHERE e.id IN (
          SELECT id FROM webhook_events
          WHERE status = 'pending' AND next_attempt_at <= ${now}
            AND (lease_expires_at IS NULL OR lease_expires_at < ${now})
          ORDER BY next_attempt_at, id LIMIT ${limit}
          FOR UPDATE SKIP LOCKED)`
      const claimed: Array<Delivery> = []
      for (const row of rows) {
        if (row.lease_owner !== null) {
          // Its sender stopped (crash, freeze) before recording an outcome: unknown, so it goes again.
          yield* sql`
            UPDATE webhook_attempts SET outcome = 'interrupted',
              error = 'the sender stopped before recording the outcome; sent again'
            WHERE event_id = ${row.id} AND attempt = ${row.attempts} AND outcome = 'sending'`
          yield* Effect.logWarning("webhook attempt interrupted; redelivering").pipe(
            Effect.annotateLogs({ event_id: row.id, attempt: row.attempts, previous_worker: row.lease_owner })
          )
        }
        // Disabled since the event was written (a test event goes whenever a URL is set): skipped, or held
        // for later when failing deliveries disabled it.
        if (row.webhook_url === null || (!row.webhook_enabled && row.type !== "webhook.test")) {
          const held = row.webhook_url !== null && row.webhook_disabled_reason !== null
          yield* sql`
            UPDATE webhook_events SET status = ${held ? "held" : "skipped"}, lease_owner = NULL,
              lease_expires_at = NULL, completed_at = ${held ? null : Math.floor(now / 1000)}
            WHERE id = ${row.id}`
          continue
        }
        // Every non-interrupted attempt ended as a failure (a delivered event is not pending);
        // a re-sent event counts from its re-send (EventResend.ts).
        const interrupted = row.attempts - row.resent_from - row.failures
        if (row.failures >= maxAttempts || interrupted >= maxAttempts) {
          yield* sql`
            UPDATE webhook_events SET status = 'failed', lease_owner = NULL, lease_expires_at = NULL,
              completed_at = ${Math.floor(now / 1000)}
            WHERE id = ${row.id}`
          continue
        }
        const [event] = yield* sql<
          { attempts: number; payload: unknown; trace_context: { traceparent?: string } | null }
        >`
          UPDATE webhook_events e SET attempts = e.attempts + 1, lease_owner = ${workerId},
            lease_expires_at = ${now + leaseMs}
          WHERE e.id = ${row.id}
          RETURNING e.attempts, e.payload,
            (SELECT t.trace_context FROM tasks t WHERE t.id = e.task_id) AS trace_context`
        yield* sql`
          INSERT INTO webhook_attempts (event_id, attempt, account_id, worker_id, started_at, outcome)
          VALUES (${row.id}, ${event!.attempts}, ${row.account_id}, ${workerId}, ${now}, 'sending')`
        claimed.push({
          eventId: row.id,
          accountId: row.account_id,
          type: row.type,
          taskId: row.task_id,
          attempt: event!.attempts,
          failures: row.failures,
          payload: event!.payload,
          traceparent: event!.trace_context?.traceparent ?? null
        })
      }
      return claimed
    }).pipe(sql.withTransaction, Effect.orDie)

  /** The account's webhook URL and its current key, read when the attempt is sent. */
  const receiver = (accountId: string) =>
    Effect.gen(function*() {
      const [row] = yield* sql<{ webhook_url: string | null; webhook_key_enc: string | null }>`
        SELECT webhook_url, webhook_key_enc FROM accounts WHERE id = ${accountId}`
      if (row?.webhook_url == null || row.webhook_key_enc === null) return Option.none<Receiver>()
      return Option.some<Receiver>({ url: row.webhook_url, key: yield* secrets.decrypt(row.webhook_key_enc) })
    }).pipe(Effect.orDie)

  /**
   * A delivery failed: the account's failing spell starts (if it had not),
   * and once it has lasted `WEBHOOK_DISABLE_AFTER_S` with no success the
   * webhook is disabled, with its reason, and the events it was still trying
   * are held for when it is enabled again (docs/webhooks.md, Disabled for
   * failing). A test event's failure does not count: it is the operator's.
   */
  const failing = (accountId: string, nowMs: number) =>
    Effect.gen(function*() {
      const [spell] = yield* sql<{ since: number }>`
        UPDATE accounts SET webhook_failing_since = coalesce(webhook_failing_since, ${nowMs})
        WHERE id = ${accountId} AND webhook_enabled
        RETURNING webhook_failing_since AS since`
      if (spell === undefined || nowMs - Number(spell.since) < disableAfterMs) return
      const since = new Date(Number(spell.since)).toISOString()
      yield* sql`
        UPDATE accounts SET webhook_enabled = false, webhook_disabled_at = ${Math.floor(nowMs / 1000)},
          webhook_disabled_reason = ${`deliveries have failed since ${since} with no success; enable it to send the events held meanwhile`}
        WHERE id = ${accountId}`
      // Every event of the spell that did not get through: still trying, or given up since it began.
      yield* sql`
        UPDATE webhook_events SET status = 'held', lease_owner = NULL, lease_expires_at = NULL, completed_at = NULL
        WHERE account_id = ${accountId} AND type <> 'webhook.test'
          AND (status = 'pending' OR (status = 'failed' AND completed_at >= ${Math.floor(Number(spell.since) / 1000)}))`
      yield* Effect.logWarning("webhook disabled: its deliveries kept failing").pipe(
        Effect.annotateLogs({ account_id: accountId, failing_since: since })
      )
    })

  /** The outcome of an attempt and the event's next state: delivered, due again per the policy, or failed. */
  const record = (delivery: Delivery, workerId: string, outcome: AttemptOutcome) =>
    Effect.gen(function*() {
      const nowMs = yield* Clock.currentTimeMillis
      const now = Math.floor(nowMs / 1000)
      // The attempt happened whatever the lease says now, so its row always gets the real outcome.
      yield* sql`
        UPDATE webhook_attempts SET outcome = ${outcome.delivered ? "delivered" : "failed"}, url = ${outcome.url},
          status_code = ${outcome.statusCode}, error = ${outcome.error}, duration_ms = ${outcome.durationMs}
        WHERE event_id = ${delivery.eventId} AND attempt = ${delivery.attempt}`
      if (outcome.delivered) {
        // Delivered is a fact even from a worker whose lease ran out.
        yield* sql`
          UPDATE webhook_events SET status = 'delivered', completed_at = ${now}, lease_owner = NULL, lease_expires_at = NULL
          WHERE id = ${delivery.eventId} AND status = 'pending'`
        // The receiver answers again: its failing spell is over (no row lock unless there was one).
        yield* sql`
          UPDATE accounts SET webhook_failing_since = NULL
          WHERE id = ${delivery.accountId} AND webhook_failing_since IS NOT NULL`
        return "delivered" as const
      }
      const next = yield* nextAttemptAt(policy, delivery.failures + 1, nowMs)
      const rows = yield* sql`
        UPDATE webhook_events SET failures = failures + 1,
          status = ${Option.isSome(next) ? "pending" : "failed"},
          next_attempt_at = ${Option.getOrElse(next, () => nowMs)},
          completed_at = ${Option.isSome(next) ? null : now},
          lease_owner = NULL, lease_expires_at = NULL
        WHERE id = ${delivery.eventId} AND attempts = ${delivery.attempt} AND lease_owner = ${workerId}
          AND status = 'pending'
        RETURNING id`
      if (rows.length === 0) return "stale" as const
      if (delivery.type !== "webhook.test") yield* failing(delivery.accountId, nowMs)
      return Option.isSome(next) ? "retry" as const : "failed" as const
    }).pipe(sql.withTransaction, Effect.orDie)

  /** A worker stopping mid-attempt: the outcome is unknown, so the event is free to go again at once. */
  const release = (delivery: Delivery, workerId: string) =>
    Effect.gen(function*() {
      yield* sql`
        UPDATE webhook_attempts SET outcome = 'interrupted', error = 'the worker stopped mid-attempt; sent again'
        WHERE event_id = ${delivery.eventId} AND attempt = ${delivery.attempt} AND outcome = 'sending'`
      yield* sql`
        UPDATE webhook_events SET lease_owner = NULL, lease_expires_at = NULL
        WHERE id = ${delivery.eventId} AND attempts = ${delivery.attempt} AND lease_owner = ${workerId}`
    }).pipe(sql.withTransaction, Effect.orDie)

  /** When the earliest pending event becomes claimable (its due time, or its lease's end), in ms. */
  const nextDue = Effect.gen(function*() {
    const [row] = yield* sql<{ due: number | null }>`
      SELECT min(GREATEST(next_attempt_at, coalesce(lease_expires_at, 0))) AS due
      FROM webhook_events WHERE status = 'pending'`
    return Option.fromNullable(row?.due === null || row?.due === undefined ? null : Number(row.due))
  }).pipe(Effect.orDie)

  /**
   * NOTIFY wake-ups on new events. A hint only: the worker also polls. On
   * PostgreSQL the stream fails when its connection is lost (the worker listens again).
   */
  const wakeups = listen(EVENTS_CHANNEL)

  /** An account's events, newest first, each with its attempts (admin API). */
  const listEvents = (accountId: string, filter: EventFilter) => listEventHistory(sql, accountId, filter)

  return { claim, receiver, record, release, nextDue, wakeups, listEvents, recordDelayMs, leaseMs } as const
})

export class WebhookDeliveries
  extends Context.Tag("WebhookDeliveries")<WebhookDeliveries, Effect.Effect.Success<typeof make>>()
{
  static readonly layer = Layer.effect(WebhookDeliveries, make)
}
