import { Effect, Either, Encoding } from "effect"
import { CallbackRefused, type CallbackRequest, type UpstreamCallbacks } from "../../src/channel/contract/Adapter.ts"

/**
 * fal's webhooks (docs/adapters/fal.md, Webhooks): with `"callbacks": true`
 * each submit carries `?fal_webhook=<the channel's callback URL>`, and fal
 * POSTs `{request_id, gateway_request_id, status: "OK" | "ERROR", payload}`
 * when the request is done, retrying for about an hour.
 *
 * fal signs each delivery with ED25519: `x-fal-webhook-signature` (hex) over
 * the lines `request id`, `user id`, `timestamp` (the three other
 * `x-fal-webhook-*` headers) and the hex SHA-256 of the raw body, with one of
 * the public keys fal publishes as a JWKS. A delivery without the headers, a
 * timestamp more than 5 minutes off, or a signature no key verifies is
 * refused; when the keys cannot be had (fal's JWKS unreachable) a delivery
 * cannot be verified and only hastens the poll, which a forged one could do
 * anyway: a callback is never the truth, the poll is.
 *
 * The webhook names only the request id, not the queue app its URLs live
 * under, so the hint names it under every app this adapter knows (the
 * engine ignores ids it holds no waiting task for).
 */

/** Where fal publishes its webhook keys. */
export const FAL_JWKS_URL = "https://rest.alpha.fal.ai/.well-known/jwks.json"
const TOLERANCE_S = 5 * 60
/** Keys are read at most this often, and again when no key verifies a signature (fal rotated them). */
const KEYS_TTL_MS = 24 * 3600 * 1000
const KEYS_RETRY_MS = 5 * 60 * 1000
const KEYS_TIMEOUT_MS = 10_000

const refused = (reason: string) => Effect.fail(new CallbackRefused({ reason }))

const parse = (body: Uint8Array): any => {
  try {
    return JSON.parse(new TextDecoder().decode(body))
  } catch {
    return undefined
  }
}

const hex = (bytes: ArrayBuffer) => [...new Uint8Array(bytes)].map((b) => b.toString(16).padStart(2, "0")).join("")

/** The raw 32-byte ED25519 keys of a JWKS (`keys[].x`, base64url). */
export const keysOfJwks = (jwks: unknown): ReadonlyArray<Uint8Array> => {
  const keys = (jwks as { keys?: unknown } | null)?.keys
  return (Array.isArray(keys) ? keys : []).flatMap((key: any) => {
    if (typeof key?.x !== "string") return []
    const raw = Encoding.decodeBase64Url(key.x)
    return Either.isRight(raw) && raw.right.length === 32 ? [raw.right] : []
  })
}

/**
 * The public keys, fetched when first needed and kept for a day, fetched
 * again sooner when a signature fails (fal rotated them); never more often
 * than every 5 minutes, so deliveries cannot make the gateway hammer fal's
 * JWKS. Undefined until a read succeeds.
 */
const keyCache = (url: string) => {
  let keys: ReadonlyArray<Uint8Array> | undefined
  let loadedAt = -Infinity
  let triedAt = -Infinity
  const load = Effect.tryPromise(async () => {
    const response = await fetch(url, { signal: AbortSignal.timeout(KEYS_TIMEOUT_MS) })
    if (!response.ok) throw new Error(`JWKS answered ${response.status}`)
    return keysOfJwks(await response.json())
  }).pipe(
    Effect.tapError((e) =>
      Effect.logWarning("fal's webhook keys could not be read").pipe(Effect.annotateLogs({ cause: String(e) }))
    ),
    Effect.option
  )
  return (now: number, fresh: boolean) =>
    Effect.gen(function*() {
      const due = keys === undefined || fresh || now - loadedAt > KEYS_TTL_MS
      if (due && now - triedAt > KEYS_RETRY_MS) {
        triedAt = now
        const loaded = yield* load
        if (loaded._tag === "Some" && loaded.value.length > 0) {
          keys = loaded.value
          loadedAt = now
        }
      }
      return keys
    })
}

const verifyWith = (keys: ReadonlyArray<Uint8Array>, signature: Uint8Array, message: Uint8Array) =>
  Effect.promise(async () => {
    for (const raw of keys) {
      try {
        const key = await crypto.subtle.importKey("raw", raw.slice(), { name: "Ed25519" }, false, ["verify"])
        if (await crypto.subtle.verify({ name: "Ed25519" }, key, signature.slice(), message.slice())) return true
      } catch {
        // A key this runtime cannot import verifies nothing.
      }
    }
    return false
  })

export const falCallbacks = (jwksUrl: string, apps: ReadonlyArray<string>): UpstreamCallbacks => {
  const keys = keyCache(jwksUrl)
  return {
    read: (request: CallbackRequest) =>
      Effect.gen(function*() {
        const requestId = request.headers["x-fal-webhook-request-id"]
        const userId = request.headers["x-fal-webhook-user-id"]
        const timestamp = request.headers["x-fal-webhook-timestamp"]
        const signatureHex = request.headers["x-fal-webhook-signature"]
        if (!requestId || !userId || !timestamp || !signatureHex) {
          return yield* refused("missing x-fal-webhook signature headers")
        }
        if (!/^\d{1,12}$/.test(timestamp)) return yield* refused("malformed x-fal-webhook-timestamp")
        if (Math.abs(request.now / 1000 - Number(timestamp)) > TOLERANCE_S) {
          return yield* refused("stale x-fal-webhook-timestamp")
        }
        const signature = Encoding.decodeHex(signatureHex)
        if (Either.isLeft(signature) || signature.right.length !== 64) {
          return yield* refused("malformed x-fal-webhook-signature")
        }
        const digest = yield* Effect.promise(() => crypto.subtle.digest("SHA-256", request.body.slice()))
        const message = new TextEncoder().encode([requestId, userId, timestamp, hex(digest)].join("\n"))
        const known = yield* keys(request.now, false)
        if (known !== undefined) {
          const ok = (yield* verifyWith(known, signature.right, message)) ||
            // fal may have rotated its keys since they were read.
            (yield* keys(request.now, true).pipe(
              Effect.flatMap((fresh) =>
                fresh === undefined || fresh === known
                  ? Effect.succeed(false)
                  : verifyWith(fresh, signature.right, message)
              )
            ))
          if (!ok) return yield* refused("no fal webhook key verifies the signature")
        }
        const parsed = parse(request.body)
        const id = typeof parsed?.request_id === "string" && /^[A-Za-z0-9_-]{1,100}$/.test(parsed.request_id)
          ? parsed.request_id as string
          : undefined
        if (id === undefined) return yield* refused("not a fal webhook body")
        // The signed header names the request too: a body about another request is not this delivery's.
        if (id !== requestId) return yield* refused("the body's request_id is not the signed one")
        return { upstreamIds: apps.map((app) => `${app}/requests/${id}`), taskIds: [] }
      })
  }
}
