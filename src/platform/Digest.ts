import { Context, Effect } from "effect"

/**
 * JSON with object keys sorted at every level, so two requests that differ
 * only in key order have the same digest ("same content" for idempotency).
 */
export const canonicalJson = (value: unknown): string => {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`
  }
  return JSON.stringify(value)
}

/** SHA-256 of text (as UTF-8) or of bytes, with Web Crypto so it runs on any runtime. */
export const sha256 = async (input: string | Uint8Array): Promise<Uint8Array> =>
  new Uint8Array(
    await crypto.subtle.digest("SHA-256", typeof input === "string" ? new TextEncoder().encode(input) : input.slice())
  )

export const sha256Hex = async (input: string | Uint8Array): Promise<string> =>
  Array.from(await sha256(input), (b) => b.toString(16).padStart(2, "0")).join("")

/** The chunks of a body in one array. */
export const concatBytes = (chunks: ReadonlyArray<Uint8Array>): Uint8Array => {
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0))
  let at = 0
  for (const chunk of chunks) {
    out.set(chunk, at)
    at += chunk.length
  }
  return out
}

/**
 * The port for SHA-256 on hot paths (every authenticated request digests its
 * key). Web Crypto's digest is asynchronous: on Node it goes through the
 * thread pool and a promise, several times the cost of the hash itself. The
 * default is Web Crypto, so every runtime and test works as is; a runtime
 * with a faster synchronous primitive provides it (src/runtime/node/Digest.ts).
 */
export class Sha256 extends Context.Reference<Sha256>()("Sha256", {
  defaultValue: (): {
    readonly hex: (input: string) => Effect.Effect<string>
    /** The same digest at once, where the runtime has a synchronous primitive (the fast routes' key check uses it). */
    readonly hexNow?: (input: string) => string
  } => ({
    hex: (input) => Effect.promise(() => sha256Hex(input))
  })
}) {}
