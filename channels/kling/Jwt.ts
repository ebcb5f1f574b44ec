import { Clock, Effect } from "effect"
import { SignJWT } from "jose"

/**
 * The legacy Kling API's bearer token (docs/adapters/kling.md, The legacy JWT):
 * a JWT signed HS256 with the account's secret key, `iss` = the access key.
 *
 * Signed by `jose` (WebCrypto underneath, so the same on Node and Deno); the
 * fake verifies with node:crypto, an independent implementation.
 *
 * - `nbf` is `NBF_SKEW_S` in the past, so a Kling clock a few seconds behind
 *   ours still accepts the token (it answers 1003 "not yet valid" otherwise).
 * - `exp` is short (`TTL_S`), so a leaked token is worth little; a token is
 *   reused while it has more than `RENEW_BEFORE_S` left, then minted again,
 *   so no request carries one about to lapse (1004 "expired").
 */

export const NBF_SKEW_S = 5
export const TTL_S = 600
export const RENEW_BEFORE_S = 300

/** A token valid from `nowS - NBF_SKEW_S` to `nowS + TTL_S`. */
export const mintJwt = (accessKey: string, secretKey: string, nowS: number) =>
  new SignJWT()
    .setProtectedHeader({ alg: "HS256", typ: "JWT" })
    .setIssuer(accessKey)
    .setExpirationTime(nowS + TTL_S)
    .setNotBefore(nowS - NBF_SKEW_S)
    .sign(new TextEncoder().encode(secretKey))

/** The current token, minted again once less than `RENEW_BEFORE_S` of it is left (or after `forget`). */
export const makeTokens = (accessKey: string, secretKey: string) => {
  let current: { token: string; exp: number } | undefined
  return {
    token: Effect.gen(function*() {
      const nowS = Math.floor((yield* Clock.currentTimeMillis) / 1000)
      if (current === undefined || current.exp - nowS < RENEW_BEFORE_S) {
        const token = yield* Effect.promise(() => mintJwt(accessKey, secretKey, nowS))
        current = { token, exp: nowS + TTL_S }
      }
      return current.token
    }),
    /** After Kling refused a token (1003/1004): the next request gets a new one. */
    forget: Effect.sync(() => {
      current = undefined
    })
  }
}
