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

/** How long reading the secret may take before this webhook goes unverified. */
const SECRET_TIMEOUT_MS = 10_000

const parse = (body: Uint8Array): any => {
  try {
    return JSON.parse(new TextDecoder().decode(body))
  } catch {
    return undefined
  }
}

/**
 * The account's signing secret, fetched on first use and kept; a failed read
 * is not kept, so the next webhook asks again. Global `fetch`, because
 * callbacks are read where no runner (and no HTTP client port) is made.
 */
const secretReader = (base: string, token: Redacted.Redacted<string>) => {
  let known: string | undefined
  return Effect.suspend(() =>
    known !== undefined ? Effect.succeed<string | undefined>(known) : Effect.tryPromise(async () => {
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
      Effect.orElseSucceed(() => undefined)
    )
  )
}

export const replicateCallbacks = (
  base: string,
  token: Redacted.Redacted<string>,
  configured: Redacted.Redacted<string> | undefined
): UpstreamCallbacks => {
  const secret = configured !== undefined ? Effect.succeed(Redacted.value(configured)) : secretReader(base, token)
  return {
    read: (request: CallbackRequest) =>
      Effect.gen(function*() {
        const key = yield* secret
        if (key !== undefined) yield* verifyStandardWebhook(key, request)
        const id = parse(request.body)?.id
        if (typeof id !== "string" || id.length === 0 || id.length > 200) {
          return yield* new CallbackRefused({ reason: "not a Replicate prediction" })
        }
        return { upstreamIds: [id], taskIds: [] }
      })
  }
}
