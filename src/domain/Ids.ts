/**
 * Prefixed, unguessable identifiers: 16 random bytes (128 bits) in base62.
 * `crypto.getRandomValues` is a web standard, so this stays runtime-neutral.
 */
const ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

export const randomBase62 = (bytes = 16): string => {
  const buf = crypto.getRandomValues(new Uint8Array(bytes))
  let n = 0n
  for (const b of buf) n = (n << 8n) | BigInt(b)
  // Fixed width so every id of a kind has the same length: ceil(bits / log2(62)).
  const width = Math.ceil((bytes * 8) / Math.log2(62))
  let out = ""
  for (let i = 0; i < width; i++) {
    out = ALPHABET[Number(n % 62n)] + out
    n /= 62n
  }
  return out
}

export const newId = (prefix: string): string => `${prefix}_${randomBase62()}`

export const IdPrefix = {
  account: "acct",
  asset: "asset",
  key: "key",
  ledger: "led",
  event: "evt",
  imageUpload: "img",
  request: "req",
  task: "task",
  upload: "upl"
} as const
