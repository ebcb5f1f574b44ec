import { Effect, Either, Encoding, Redacted } from "effect"
import { CallbackRefused, type CallbackRequest, type UpstreamCallbacks } from "../../src/channel/contract/Adapter.ts"

/**
 * OpenRouter's video webhooks (docs/adapters/openrouter.md, Callbacks): with
 * `callback_url` on the create, OpenRouter POSTs an event when the job ends,
 * `{ "type": "video.generation.<status>", "created_at", "data": { "id",
 * "status", … } }`. With a signing secret in the workspace's settings it signs
 * each one: `X-OpenRouter-Signature: t=<unix seconds>,v1=<hex>`, the hex an
 * HMAC-SHA256 under the secret of `<t>,<raw body>`. With
 * `credentials.webhook_secret` set, a callback must carry a matching, fresh
 * signature (5 minutes either way, as OpenRouter's cookbook checks it);
 * without it nothing proves a callback came from OpenRouter. Either way it
 * only names the job to poll: the poll with the channel's key says what the
 * job is.
 */

/** How far the signed timestamp may be from our clock before the callback counts as a replay. */
const TOLERANCE_S = 5 * 60

const refused = (reason: string) => Effect.fail(new CallbackRefused({ reason }))

const parse = (body: Uint8Array): any => {
  try {
    return JSON.parse(new TextDecoder().decode(body))
  } catch {
    return undefined
  }
}

/** Checks `X-OpenRouter-Signature` against the raw body; any `v1=` entry that matches is enough. */
export const verifySignature = (secret: string, request: CallbackRequest): Effect.Effect<void, CallbackRefused> =>
  Effect.gen(function*() {
    const header = request.headers["x-openrouter-signature"]
    if (!header) return yield* refused("missing X-OpenRouter-Signature")
    const parts = header.split(",").map((p) => p.trim())
    const timestamp = parts.find((p) => p.startsWith("t="))?.slice(2)
    if (timestamp === undefined || !/^\d{1,12}$/.test(timestamp)) return yield* refused("malformed signature timestamp")
    if (Math.abs(request.now / 1000 - Number(timestamp)) > TOLERANCE_S) {
      return yield* refused("stale signature timestamp")
    }
    const macs = parts.flatMap((p) => {
      const mac = p.startsWith("v1=") ? Encoding.decodeHex(p.slice(3)) : undefined
      return mac !== undefined && Either.isRight(mac) && mac.right.length === 32 ? [mac.right] : []
    })
    const prefix = new TextEncoder().encode(`${timestamp},`)
    const signed = new Uint8Array(prefix.length + request.body.length)
    signed.set(prefix)
    signed.set(request.body, prefix.length)
    const key = yield* Effect.promise(() =>
      crypto.subtle.importKey("raw", new TextEncoder().encode(secret), { name: "HMAC", hash: "SHA-256" }, false, [
        "verify"
      ])
    )
    // WebCrypto's verify compares in constant time.
    for (const mac of macs) {
      if (yield* Effect.promise(() => crypto.subtle.verify("HMAC", key, mac.slice(), signed))) return
    }
    return yield* refused("no signature matches")
  })

export const openRouterCallbacks = (secret: Redacted.Redacted<string> | undefined): UpstreamCallbacks => ({
  read: (request: CallbackRequest) =>
    Effect.gen(function*() {
      if (secret !== undefined) yield* verifySignature(Redacted.value(secret), request)
      const event = parse(request.body)
      const id = event?.data?.id
      if (
        typeof event?.type !== "string" || !event.type.startsWith("video.generation.") ||
        typeof id !== "string" || id.length === 0 || id.length > 200
      ) {
        return yield* refused("not an OpenRouter video event")
      }
      return { upstreamIds: [id], taskIds: [] }
    })
})
