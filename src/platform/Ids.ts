/**
 * Prefixed, unguessable identifiers: 16 random bytes (128 bits) in base62.
 * `crypto.getRandomValues` is a web standard, so this stays runtime-neutral.
 */
const ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

export const randomBase62 = (bytes = 16): string => base62Of(crypto.getRandomValues(new Uint8Array(bytes)))

/**
 * The bytes as one big-endian number in base62, fixed width so every id of a
 * kind has the same length: ceil(bits / log2(62)). Long division over the
 * byte array, in place: the same digits as BigInt arithmetic without a BigInt
 * per step (a request id is made on every request).
 */
export const base62Of = (digits: Uint8Array): string => {
  const width = Math.ceil((digits.length * 8) / Math.log2(62))
  let out = ""
  for (let i = 0; i < width; i++) {
    let rem = 0
    for (let j = 0; j < digits.length; j++) {
      const acc = rem * 256 + digits[j]!
      digits[j] = Math.floor(acc / 62)
      rem = acc % 62
    }
    out = ALPHABET[rem] + out
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
