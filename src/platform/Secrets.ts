import { FileSystem, Path } from "@effect/platform"
import { Context, Effect, Either, Encoding, Layer, Option, Redacted } from "effect"
import { AppConfig } from "./AppConfig.ts"
import { randomBase62 } from "./Ids.ts"
import { constantTimeEqual } from "./Keys.ts"

/**
 * Process-wide secrets: the admin bearer token, the key that encrypts
 * webhook keys at rest (the service must send those, so they cannot be hashed)
 * and the key that signs the local object store's URLs.
 * Each comes from the environment or, failing that, from a file under
 * `DATA_DIR` created at first start; replicas that share a database must be
 * given the same values through the environment.
 */
export interface SecretsService {
  readonly checkAdminToken: (token: string) => boolean
  /** `/metrics`: the `METRICS_TOKEN` when one is set, or the admin token. */
  readonly checkMetricsToken: (token: string) => boolean
  readonly encrypt: (plaintext: string) => Effect.Effect<string>
  readonly decrypt: (ciphertext: string) => Effect.Effect<string>
  /** Base64url HMAC-SHA256 of `message` under the storage signing key. */
  readonly signStorageUrl: (message: string) => Effect.Effect<string>
  /**
   * The unguessable token of a channel's upstream callback URL: base64url
   * HMAC-SHA256 of the channel's name under a key derived from the
   * encryption key, so every replica computes the same tokens, nothing needs
   * storing, and the name cannot be read back from the URL.
   */
  readonly callbackToken: (channel: string) => Effect.Effect<string>
}

export class Secrets extends Context.Tag("Secrets")<Secrets, SecretsService>() {
  static readonly layer = Layer.effect(
    Secrets,
    Effect.gen(function*() {
      const config = yield* AppConfig
      const fs = yield* FileSystem.FileSystem
      const path = yield* Path.Path

      const fromFileOrCreate = (
        name: string,
        create: () => string,
        announce: (value: string, file: string) => Effect.Effect<void>
      ) =>
        Effect.gen(function*() {
          const file = path.join(config.dataDir, name)
          if (yield* fs.exists(file)) return (yield* fs.readFileString(file)).trim()
          yield* fs.makeDirectory(config.dataDir, { recursive: true })
          const value = create()
          yield* fs.writeFileString(file, value + "\n", { mode: 0o600 })
          yield* announce(value, file)
          return value
        }).pipe(Effect.orDie)

      const adminToken = yield* Option.match(config.adminToken, {
        onSome: (t) => Effect.succeed(Redacted.value(t)),
        onNone: () =>
          fromFileOrCreate("admin-token", () => `adm_${randomBase62(24)}`, (value, file) =>
            // Printed once, on the start that creates it, so the operator can bootstrap.
            Effect.sync(() =>
              console.log(`ADMIN_TOKEN was not set; generated one and stored it in ${file}:\n${value}`)
            ))
      })

      const metricsToken = Option.getOrUndefined(Option.map(config.metricsToken, Redacted.value))

      const keyMaterial = yield* Option.match(config.encryptionKey, {
        onSome: (k) => Effect.succeed(Redacted.value(k)),
        onNone: () => fromFileOrCreate("encryption-key", () => randomBase62(32), () => Effect.void)
      })
      const aesKey = yield* Effect.promise(async () =>
        crypto.subtle.importKey(
          "raw",
          await crypto.subtle.digest("SHA-256", new TextEncoder().encode(keyMaterial)),
          "AES-GCM",
          false,
          ["encrypt", "decrypt"]
        )
      )

      // Its own key, derived with a label, so a token is never a signature of another purpose.
      const callbackKey = yield* Effect.promise(async () =>
        crypto.subtle.importKey(
          "raw",
          await crypto.subtle.digest("SHA-256", new TextEncoder().encode(`upstream-callbacks:${keyMaterial}`)),
          { name: "HMAC", hash: "SHA-256" },
          false,
          ["sign"]
        )
      )

      const storageKeyMaterial = yield* Option.match(config.storageSigningKey, {
        onSome: (k) => Effect.succeed(Redacted.value(k)),
        onNone: () => fromFileOrCreate("storage-signing-key", () => randomBase62(32), () => Effect.void)
      })
      const hmacKey = yield* Effect.promise(() =>
        crypto.subtle.importKey(
          "raw",
          new TextEncoder().encode(storageKeyMaterial),
          { name: "HMAC", hash: "SHA-256" },
          false,
          ["sign"]
        )
      )

      return {
        checkAdminToken: (token) => token.length > 0 && constantTimeEqual(token, adminToken),
        checkMetricsToken: (token) =>
          token.length > 0 && (
            constantTimeEqual(token, adminToken) ||
            (metricsToken !== undefined && constantTimeEqual(token, metricsToken))
          ),
        encrypt: (plaintext) =>
          Effect.promise(async () => {
            const iv = crypto.getRandomValues(new Uint8Array(12))
            const sealed = await crypto.subtle.encrypt(
              { name: "AES-GCM", iv },
              aesKey,
              new TextEncoder().encode(plaintext)
            )
            return `v1.${Encoding.encodeBase64Url(iv)}.${Encoding.encodeBase64Url(new Uint8Array(sealed))}`
          }),
        decrypt: (ciphertext) =>
          Effect.promise(async () => {
            const [iv, sealed] = ciphertext.split(".").slice(1).map((part) =>
              new Uint8Array(Either.getOrThrow(Encoding.decodeBase64Url(part)))
            )
            const opened = await crypto.subtle.decrypt({ name: "AES-GCM", iv: iv! }, aesKey, sealed!)
            return new TextDecoder().decode(opened)
          }),
        signStorageUrl: (message) =>
          Effect.promise(async () =>
            Encoding.encodeBase64Url(
              new Uint8Array(await crypto.subtle.sign("HMAC", hmacKey, new TextEncoder().encode(message)))
            )
          ),
        callbackToken: (channel) =>
          Effect.promise(async () =>
            Encoding.encodeBase64Url(
              new Uint8Array(await crypto.subtle.sign("HMAC", callbackKey, new TextEncoder().encode(channel)))
            )
          )
      }
    })
  )
}
