import { HttpClient, HttpClientRequest } from "@effect/platform"
import { Cause, Clock, Duration, Effect, Either, Option, Queue, Ref, Schedule, Stream, Tracer } from "effect"
import { AppConfig } from "../platform/AppConfig.ts"
import { randomBase62 } from "../platform/Ids.ts"
import { Metrics } from "../platform/metrics/Metrics.ts"
import { TargetHttpClient } from "../platform/TargetHttpClient.ts"
import { checkTargetUrl } from "../platform/TargetUrl.ts"
import { parseTraceparent } from "../platform/TraceContext.ts"
import { signWebhook, WebhookHeader } from "./DeliveryRules.ts"
import { type AttemptOutcome, type Delivery, WebhookDeliveries } from "./WebhookDeliveries.ts"

/** Attempts one worker process has in flight at most. */
const CONCURRENCY = 16
/** The shortest pause between two looks at the outbox when something is due but could not be claimed. */
const MIN_PAUSE_MS = 50

const describeError = (error: unknown): string => {
  if (error instanceof Cause.TimeoutException) return error.message
  const e = error as { reason?: string; cause?: { code?: string; message?: string }; message?: string }
  const cause = e.cause
  const detail = cause?.code !== undefined
    ? `${cause.code}: ${cause.message ?? ""}`
    : cause?.message ?? e.message ?? String(error)
  return e.reason !== undefined ? `${e.reason} error: ${detail}` : detail
}

/**
 * The webhook delivery worker (ROLE=worker or all). It claims due events
 * from the outbox, keeps up to CONCURRENCY attempts in flight, and looks
 * again when an attempt ends, when a NOTIFY says an event was written, when
 * the earliest scheduled retry falls due, or at the latest after the
 * engine's poll interval (NOTIFY is a hint; polling is the guarantee).
 */
export const webhookWorker = Effect.gen(function*() {
  const webhooks = yield* WebhookDeliveries
  const metrics = yield* Metrics
  const config = yield* AppConfig
  // The receiver gets no trace headers of ours: nothing internal leaves with an event.
  const client = (yield* TargetHttpClient).pipe(HttpClient.withTracerPropagation(false))
  const workerId = `whk_${randomBase62(8)}`
  const timeout = Duration.millis(Math.round(config.webhook.timeoutS * 1000))
  const pollMs = config.limits.engine.poll_interval_ms
  const running = yield* Ref.make(0)
  const wake = yield* Queue.sliding<void>(1)

  /** One POST of the event as recorded; the outcome, never a failure. */
  const send = (delivery: Delivery): Effect.Effect<AttemptOutcome> =>
    Effect.gen(function*() {
      const started = yield* Clock.currentTimeMillis
      const elapsed = Effect.map(Clock.currentTimeMillis, (now) => now - started)
      const receiver = yield* webhooks.receiver(delivery.accountId)
      if (Option.isNone(receiver)) {
        return { url: null, delivered: false, statusCode: null, error: "no webhook URL is set", durationMs: 0 }
      }
      const { key, url } = receiver.value
      // Checked again at send time: the rule or the stored URL may have changed since it was set.
      const allowed = yield* Effect.either(checkTargetUrl(url, config.allowPrivateTargets))
      if (Either.isLeft(allowed)) {
        return { url, delivered: false, statusCode: null, error: allowed.left.message, durationMs: 0 }
      }
      const body = JSON.stringify(delivery.payload)
      const timestamp = Math.floor(started / 1000)
      // The URL as checked (normalised), so the request goes where the check looked.
      const request = HttpClientRequest.post(allowed.right).pipe(
        HttpClientRequest.setHeaders({
          authorization: `Bearer ${key}`,
          [WebhookHeader.id]: delivery.eventId,
          [WebhookHeader.timestamp]: String(timestamp),
          [WebhookHeader.signature]: yield* signWebhook(key, delivery.eventId, timestamp, body),
          "user-agent": "media-task-gateway-webhooks/1"
        }),
        HttpClientRequest.bodyText(body, "application/json")
      )
      const answer = yield* client.execute(request).pipe(Effect.timeout(timeout), Effect.either)
      if (Either.isLeft(answer)) {
        return {
          url,
          delivered: false,
          statusCode: null,
          error: describeError(answer.left),
          durationMs: yield* elapsed
        }
      }
      const response = answer.right
      const durationMs = yield* elapsed
      // The body is ignored; it is read (bounded in time) only to free the connection.
      yield* response.stream.pipe(Stream.runDrain, Effect.timeout(timeout), Effect.ignore)
      const delivered = response.status >= 200 && response.status < 300
      return {
        url,
        delivered,
        statusCode: response.status,
        error: delivered ? null : `HTTP ${response.status}`,
        durationMs
      }
    }).pipe(
      // A defect (an undecryptable key, say) is a failed attempt, recorded and retried like the others.
      Effect.catchAllDefect((defect) =>
        Effect.succeed<AttemptOutcome>({
          url: null,
          delivered: false,
          statusCode: null,
          error: `internal error: ${describeError(defect)}`,
          durationMs: 0
        })
      )
    )

  const deliver = (delivery: Delivery) => {
    const context = delivery.traceparent === null ? undefined : parseTraceparent(delivery.traceparent)
    return Effect.gen(function*() {
      const outcome = yield* send(delivery)
      if (webhooks.recordDelayMs > 0) yield* Effect.sleep(Duration.millis(webhooks.recordDelayMs))
      const state = yield* webhooks.record(delivery, workerId, outcome)
      metrics.webhookDelivery(state)
      yield* Effect.annotateCurrentSpan({ "webhook.status_code": outcome.statusCode ?? 0, "webhook.state": state })
      yield* Effect.logInfo("webhook attempt").pipe(Effect.annotateLogs({
        worker_id: workerId,
        event_id: delivery.eventId,
        event_type: delivery.type,
        attempt: delivery.attempt,
        status_code: outcome.statusCode,
        error: outcome.error,
        duration_ms: outcome.durationMs,
        state
      }))
    }).pipe(
      // Stopped mid-attempt (SIGTERM): the outcome is unknown, the event goes again.
      Effect.onInterrupt(() => webhooks.release(delivery, workerId)),
      Effect.withSpan("webhook.deliver", {
        ...(context === undefined ? {} : { parent: Tracer.externalSpan(context) }),
        attributes: {
          "webhook.event_id": delivery.eventId,
          "webhook.event_type": delivery.type,
          "webhook.attempt": delivery.attempt,
          ...(delivery.taskId === null ? {} : { "task.id": delivery.taskId })
        }
      })
    )
  }

  yield* webhooks.wakeups.pipe(
    Stream.runForEach(() => wake.offer(undefined)),
    Effect.tapErrorCause((cause) => Effect.logWarning("webhook listener lost; polling until it is back", cause)),
    Effect.retry(Schedule.spaced("1 second")),
    Effect.forkScoped
  )

  /** Claims as many due events as there are free slots: "more" when the batch was full. */
  const fill = Effect.gen(function*() {
    const free = CONCURRENCY - (yield* Ref.get(running))
    if (free <= 0) return "full" as const
    const claims = yield* webhooks.claim(workerId, free)
    for (const delivery of claims) {
      yield* Ref.update(running, (n) => n + 1)
      yield* deliver(delivery).pipe(
        Effect.catchAllCause((cause) =>
          Cause.isInterruptedOnly(cause) ? Effect.void : Effect.logError("webhook attempt failed to run", cause)
        ),
        Effect.ensuring(Ref.update(running, (n) => n - 1).pipe(Effect.zipRight(wake.offer(undefined)))),
        Effect.forkScoped
      )
    }
    return claims.length === free ? "more" as const : "idle" as const
  })

  /** How long to wait for a wake-up: until the next event falls due, at most one poll interval. */
  const pause = Effect.gen(function*() {
    const due = yield* webhooks.nextDue
    const now = yield* Clock.currentTimeMillis
    return Option.match(due, {
      onNone: () => pollMs,
      onSome: (at) => Math.min(pollMs, Math.max(MIN_PAUSE_MS, at - now))
    })
  })

  yield* Effect.logInfo("webhook worker started").pipe(Effect.annotateLogs({ worker_id: workerId }))
  yield* Effect.forever(
    fill.pipe(
      Effect.flatMap((state) =>
        state === "more"
          ? Effect.void
          : Effect.flatMap(
            state === "full" ? Effect.succeed(pollMs) : pause,
            (ms) => Effect.timeout(wake.take, Duration.millis(ms)).pipe(Effect.ignore)
          )
      ),
      Effect.catchAllCause((cause) =>
        Effect.logError("claiming webhook events failed", cause).pipe(
          Effect.zipRight(Effect.sleep(Duration.millis(pollMs)))
        )
      )
    )
  )
})
