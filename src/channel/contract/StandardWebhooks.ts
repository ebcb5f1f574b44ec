import { Effect, Either, Encoding } from "effect"
import { CallbackRefused, type CallbackRequest } from "./Callbacks.ts"

/** How far a signed timestamp may be from our clock, either way, before the callback is a replay (the spec's ±5 min). */
const TOLERANCE_S = 5 * 60

const refused = (reason: string) => Effect.fail(new CallbackRefused({ reason }))

/**
 * Verifies a Standard Webhooks signature (https://www.standardwebhooks.com),
 * for adapters whose upstream signs its callbacks that way. The key is the
 * base64 part of the secret after `whsec_`; `webhook-signature` holds
 * space-separated `v1,<base64>` entries (several while the upstream rotates
 * its secret: any one that matches is enough), each an HMAC-SHA256 of
 * `<webhook-id>.<webhook-timestamp>.<raw body>`. A timestamp more than 5
 * minutes off our clock is refused, so a recorded callback cannot be
 * replayed later. WebCrypto's `verify` compares in constant time.
 */
export const verifyStandardWebhook = (
  secret: string,
  request: CallbackRequest
): Effect.Effect<void, CallbackRefused> =>
  Effect.gen(function*() {
    const id = request.headers["webhook-id"]
    const timestamp = request.headers["webhook-timestamp"]
    const signatures = request.headers["webhook-signature"]
    if (!id || !timestamp || !signatures) return yield* refused("missing webhook signature headers")
    if (!/^\d{1,12}$/.test(timestamp)) return yield* refused("malformed webhook-timestamp")
    if (Math.abs(request.now / 1000 - Number(timestamp)) > TOLERANCE_S) return yield* refused("stale webhook-timestamp")
    const keyBytes = Encoding.decodeBase64(secret.replace(/^whsec_/, ""))
    if (Either.isLeft(keyBytes) || keyBytes.right.length === 0) {
      return yield* refused("the configured secret is not base64")
    }
    const prefix = new TextEncoder().encode(`${id}.${timestamp}.`)
    const signed = new Uint8Array(prefix.length + request.body.length)
    signed.set(prefix)
    signed.set(request.body, prefix.length)
    const candidates = signatures.split(" ").flatMap((entry) => {
      const [version, value] = entry.split(",", 2)
      const mac = version === "v1" && value ? Encoding.decodeBase64(value) : undefined
      return mac !== undefined && Either.isRight(mac) ? [mac.right] : []
    })
    const key = yield* Effect.promise(() =>
      crypto.subtle.importKey("raw", keyBytes.right.slice(), { name: "HMAC", hash: "SHA-256" }, false, ["verify"])
    )
    for (const mac of candidates) {
      if (yield* Effect.promise(() => crypto.subtle.verify("HMAC", key, mac.slice(), signed))) return
    }
    return yield* refused("no webhook signature matches")
  })
