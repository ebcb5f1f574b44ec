import { sha256Hex } from "./Digest.ts"
import { randomBase62 } from "./Ids.ts"

/**
 * Credentials. The prefix tells the kind: `sk-` model tokens create tasks, `ak_`
 * resource keys read them, `wk-` webhook keys only authenticate callbacks. Each
 * carries 192 random bits, above the 128 every id carries (docs/api.md, Lists).
 */
export const KeyKind = { model: "sk-", resource: "ak_", webhook: "wk-" } as const

export const generateKey = (kind: keyof typeof KeyKind): string => KeyKind[kind] + randomBase62(24)

const KEY_SHAPE = /^(sk-|ak_|wk-)[0-9A-Za-z]{20,64}$/
export const isWellFormedKey = (key: string): boolean => KEY_SHAPE.test(key)

/**
 * Keys are stored as SHA-256 digests. They are long random strings, not
 * passwords, so a fast unsalted hash is enough and lets the database look a
 * key up by its digest.
 */
export const hashKey = (key: string): Promise<string> => sha256Hex(key)

/** Compares two strings in time that depends only on their lengths. */
export const constantTimeEqual = (a: string, b: string): boolean => {
  const ea = new TextEncoder().encode(a)
  const eb = new TextEncoder().encode(b)
  let diff = ea.length ^ eb.length
  const n = Math.max(ea.length, eb.length)
  for (let i = 0; i < n; i++) diff |= (ea[i] ?? 0) ^ (eb[i] ?? 0)
  return diff === 0
}

/** A short, non-secret hint of a key for listings and logs. */
export const keyHint = (key: string): string => `${key.slice(0, 3)}…${key.slice(-4)}`
