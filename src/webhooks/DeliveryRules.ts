import { Duration, Effect, Encoding, Option, Schedule, ScheduleDecision, ScheduleIntervals } from "effect"

/**
 * Webhook delivery rules that need no database: the retry policy as an Effect
 * Schedule, the step from "n attempts failed" to "when is the next one", and
 * the Standard Webhooks signature (docs/webhooks.md, The call).
 */

/**
 * The retry policy of the spec: a fixed interval between attempts and
 * `maxAttempts` in total (the first attempt plus `maxAttempts - 1` retries).
 */
export const retryPolicy = (settings: { readonly maxAttempts: number; readonly retryIntervalS: number }) =>
  Schedule.spaced(Duration.millis(Math.round(settings.retryIntervalS * 1000))).pipe(
    Schedule.intersect(Schedule.recurs(settings.maxAttempts - 1))
  )

/**
 * When the attempt after `failures` failed attempts is due, `failures` being
 * at least 1, given that the last one ended at `nowMs`; none when the policy
 * is exhausted. The schedule lives in the database, not in a sleeping fiber,
 * so the policy is replayed from its initial state: step n is the decision
 * after the n-th failure. Any Schedule works here, including ones whose
 * delays grow with the recurrence count.
 */
export const nextAttemptAt = <Out>(
  policy: Schedule.Schedule<Out, unknown>,
  failures: number,
  nowMs: number
): Effect.Effect<Option.Option<number>> =>
  Effect.gen(function*() {
    let state = policy.initial
    let decision: ScheduleDecision.ScheduleDecision = ScheduleDecision.done
    for (let i = 0; i < failures; i++) {
      const [next, , d] = yield* policy.step(nowMs, undefined, state)
      if (ScheduleDecision.isDone(d)) return Option.none()
      state = next
      decision = d
    }
    return ScheduleDecision.isContinue(decision)
      ? Option.some(Math.max(nowMs, ScheduleIntervals.start(decision.intervals)))
      : Option.none()
  })

/** Standard Webhooks header names (https://www.standardwebhooks.com). */
export const WebhookHeader = {
  id: "webhook-id",
  timestamp: "webhook-timestamp",
  signature: "webhook-signature"
} as const

/**
 * `v1,` + base64 HMAC-SHA256 of `id.timestamp.body`, keyed by the UTF-8 bytes
 * of the `wk-` key. A Standard Webhooks library verifies it when given the
 * key's bytes base64-encoded as its secret. Web Crypto, so it runs anywhere.
 */
export const signWebhook = (key: string, id: string, timestamp: number, body: string): Effect.Effect<string> =>
  Effect.promise(async () => {
    const hmac = await crypto.subtle.importKey(
      "raw",
      new TextEncoder().encode(key),
      { name: "HMAC", hash: "SHA-256" },
      false,
      ["sign"]
    )
    const mac = await crypto.subtle.sign("HMAC", hmac, new TextEncoder().encode(`${id}.${timestamp}.${body}`))
    return `v1,${Encoding.encodeBase64(new Uint8Array(mac))}`
  })
