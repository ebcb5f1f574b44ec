import { Effect, Layer } from "effect"
import { createHash } from "node:crypto"
import { Sha256 } from "../../platform/Digest.ts"

/**
 * SHA-256 with node:crypto: synchronous and native, where Web Crypto's
 * digest takes a thread-pool round trip and a promise per call. Same hex
 * output, so stored key digests match either way.
 */
const hexNow = (input: string) => createHash("sha256").update(input, "utf8").digest("hex")

export const Sha256Live = Layer.succeed(Sha256, {
  hex: (input: string) => Effect.sync(() => hexNow(input)),
  hexNow
})
