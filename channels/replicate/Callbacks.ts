import { Effect, Redacted } from "effect"
import {
  CallbackRefused,
  type CallbackRequest,
  type UpstreamCallbacks,
  verifyStandardWebhook
} from "../../src/channel/contract/Adapter.ts"

/**
 * Replicate's webhooks (docs/adapters/replicate.md, Webhooks): the prediction
 * object, posted once it completes (`webhook_events_filter: ["completed"]`),
 * retried until we answer 2xx, signed with Standard Webhooks headers. The
 * signing secret is the account's, read once from
 * `GET {base}/webhooks/default/secret` with the channel's token and kept (or
 * configured as `credentials.webhook_secret`). A webhook whose signature does
 * not match is refused; while the secret cannot be read (Replicate down), a
 * webhook is unverifiable and only names the prediction to poll, as any
 * callback does: the poll, with our token, says what the prediction is.
 */

/** How long reading the secret may take before this webhook goes unverified (the gateway answers within 4 s). */
const SECRET_TIMEOUT_MS = 3000
/** After a failed read, webhooks go unverified this long before the secret is asked for again. */
const RETRY_READ_MS = 60_000
/** A kept secret is read again after a mismatch at most this often. */
const REREAD_MS = 5 * 60_000

const parse = (body: Uint8Array): any => {
  try {
    return JSON.parse(new TextDecoder().decode(body))
  } catch {
    return undefined
  }
}

interface Secret {
  /** The secret at `now` (a webhook's arrival), or undefined while it cannot be read (the webhook is unverifiable). */
  readonly get: (now: number) => Effect.Effect<string | undefined>
  /** Read again after a signature did not match, in case the account's secret was rotated; undefined if unchanged. */
  readonly reread: (now: number) => Effect.Effect<string | undefined>
}

/**
 * The account's signing secret, read on first use and kept. A failed read
 * is retried no sooner than a minute later, and a kept secret is read again
 * (at most every five minutes) when a signature does not match it, so a
 * rotated secret is picked up. Global `fetch`, because callbacks are read
 * where no runner (and no HTTP client port) is made; bounded so the webhook
 * is still answered within the gateway's time.
 */
const secretReader = (base: string, token: Redacted.Redacted<string>): Secret => {
  let known: string | undefined
  let readAt = Number.NEGATIVE_INFINITY
  const read = (now: number) =>
    Effect.tryPromise(async () => {
      readAt = now
      const response = await fetch(`${base}/webhooks/default/secret`, {
        headers: { authorization: `Bearer ${Redacted.value(token)}` },
        signal: AbortSignal.timeout(SECRET_TIMEOUT_MS)
      })
      const key = response.ok ? ((await response.json()) as { key?: unknown } | null)?.key : undefined
      if (typeof key !== "string" || !key.startsWith("whsec_")) throw new Error(`no secret (${response.status})`)
      return (known = key)
    }).pipe(
      Effect.tapError((e) =>
        Effect.logWarning("reading Replicate's webhook secret failed").pipe(
          Effect.annotateLogs({ cause: String(e.error) })
        )
      ),
      Effect.orElseSucceed(() => known)
    )
  return {
    get: (now) =>
      Effect.suspend(() => known !== undefined || now - readAt < RETRY_READ_MS ? Effect.succeed(known) : read(now)),
    reread: (now) =>
      Effect.suspend(() => {
        if (now - readAt < REREAD_MS) return Effect.succeed(undefined)
        const before = known
        return Effect.map(read(now), (key) => (key !== before ? key : undefined))
      })
  }
}

export const replicateCallbacks = (
  base: string,
  token: Redacted.Redacted<string>,
  configured: Redacted.Redacted<string> | undefined
): UpstreamCallbacks => {
  const secret: Secret = configured !== undefined
    ? { get: () => Effect.succeed(Redacted.value(configured)), reread: () => Effect.succeed(undefined) }
    : secretReader(base, token)
  return {
    read: (request: CallbackRequest) =>
      Effect.gen(function*() {
        const key = yield* secret.get(request.now)
        if (key !== undefined) {
          yield* verifyStandardWebhook(key, request).pipe(
            Effect.catchTag("CallbackRefused", (refusal) =>
              Effect.flatMap(
                secret.reread(request.now),
                (rotated) => rotated === undefined ? Effect.fail(refusal) : verifyStandardWebhook(rotated, request)
              ))
          )
        }
        const id = parse(request.body)?.id
        if (typeof id !== "string" || id.length === 0 || id.length > 200) {
          return yield* new CallbackRefused({ reason: "not a Replicate prediction" })
        }
        return { upstreamIds: [id], taskIds: [] }
      })
  }
}
