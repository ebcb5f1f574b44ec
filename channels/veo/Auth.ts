import { HttpClient, HttpClientRequest } from "@effect/platform"
import { Duration, Effect, Either, Schema } from "effect"
import { importPKCS8, SignJWT } from "jose"
import { answerDetail, type GenerationError, withUpstream } from "../../src/channel/contract/Adapter.ts"
import { fromTransport, misconfigured, transient } from "./Failures.ts"

/**
 * Vertex AI's OAuth bearer from a service-account key (docs/adapters/veo.md,
 * Vertex authentication): an RS256-signed JWT assertion (`iss` the account's
 * email, `aud` the token endpoint, scope cloud-platform, one hour) exchanged at
 * the key's `token_uri` for an access token, kept until five minutes before it
 * ends.
 *
 * Signing is `jose`'s (WebCrypto underneath, so the same on Node and Deno):
 * a PEM parser and a JWS encoder are easy to get subtly wrong by hand. The token endpoint is
 * the key file's own `token_uri` (real keys carry
 * `https://oauth2.googleapis.com/token`), which is how tests point it at a fake.
 */

export const ServiceAccount = Schema.Struct({
  client_email: Schema.NonEmptyString,
  private_key: Schema.String.pipe(Schema.pattern(/-----BEGIN PRIVATE KEY-----/, { message: () => "a PKCS#8 PEM key" })),
  token_uri: Schema.optionalWith(Schema.String.pipe(Schema.pattern(/^https?:\/\//)), {
    default: () => "https://oauth2.googleapis.com/token"
  })
})
export type ServiceAccount = typeof ServiceAccount.Type

/** The key file's JSON (from the variable config names), or why it is not a service-account key. */
export const parseServiceAccount = (json: string): Either.Either<ServiceAccount, string> => {
  let value: unknown
  try {
    value = JSON.parse(json)
  } catch {
    return Either.left("is not JSON")
  }
  return Either.mapLeft(
    Schema.decodeUnknownEither(ServiceAccount)(value),
    () => "is not a service-account key (client_email, private_key)"
  )
}

export const SCOPE = "https://www.googleapis.com/auth/cloud-platform"
const LIFETIME_S = 3600
const EARLY_S = 300

/** The signed assertion of RFC 7523 §2.1 for this account, issued at `nowS`. */
export const assertion = async (account: ServiceAccount, nowS: number) =>
  new SignJWT({ scope: SCOPE })
    .setProtectedHeader({ alg: "RS256", typ: "JWT" })
    .setIssuer(account.client_email)
    .setAudience(account.token_uri)
    .setIssuedAt(nowS)
    .setExpirationTime(nowS + LIFETIME_S)
    .sign(await importPKCS8(account.private_key, "RS256"))

const TokenAnswer = Schema.Struct({ access_token: Schema.NonEmptyString, expires_in: Schema.optional(Schema.Number) })

/**
 * A function giving a valid access token, minting one when none is held or
 * it is about to end. Concurrent callers share one exchange. A refused key
 * (400/401/403) is the channel's configuration; anything else is transient.
 */
export const makeTokens = (client: HttpClient.HttpClient, account: ServiceAccount, seconds: number) =>
  Effect.gen(function*() {
    let held: { token: string; until: number } | undefined
    const lock = yield* Effect.makeSemaphore(1)
    const mint: Effect.Effect<string, GenerationError> = Effect.gen(function*() {
      const now = Date.now()
      const jwt = yield* Effect.tryPromise({
        try: () => assertion(account, Math.floor(now / 1000)),
        catch: misconfigured
      })
      const response = yield* client.execute(
        HttpClientRequest.post(account.token_uri).pipe(
          HttpClientRequest.bodyUrlParams({ grant_type: "urn:ietf:params:oauth:grant-type:jwt-bearer", assertion: jwt })
        )
      ).pipe(Effect.mapError(fromTransport))
      const body = yield* response.json.pipe(Effect.orElseSucceed(() => null))
      if (response.status === 400 || response.status === 401 || response.status === 403) {
        yield* Effect.logWarning("the OAuth token endpoint refused the service-account key").pipe(
          Effect.annotateLogs({ upstream_status: response.status, upstream_body: JSON.stringify(body).slice(0, 300) })
        )
        return yield* withUpstream(
          misconfigured(),
          answerDetail({ status: response.status, text: JSON.stringify(body), body })
        )
      }
      const answer = Schema.decodeUnknownOption(TokenAnswer)(body)
      if (response.status !== 200 || answer._tag === "None") return yield* transient()
      held = {
        token: answer.value.access_token,
        until: now + ((answer.value.expires_in ?? LIFETIME_S) - EARLY_S) * 1000
      }
      return held.token
    }).pipe(
      // A token exchange that never answers created nothing: not taken, tried again.
      Effect.catchTag("GenerationError", (e) => e.ambiguous ? Effect.fail(transient()) : Effect.fail(e)),
      Effect.timeoutFail({ duration: Duration.seconds(seconds), onTimeout: () => transient() })
    )
    return lock.withPermits(1)(
      Effect.suspend(() => held !== undefined && held.until > Date.now() ? Effect.succeed(held.token) : mint)
    )
  })
