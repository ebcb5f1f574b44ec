/**
 * Prefixed, unguessable identifiers: 16 random bytes (128 bits) in base62.
 * `crypto.getRandomValues` is a web standard, so this stays runtime-neutral.
 */
const ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

/**
 * Random bytes for ids, drawn from a pool the CSPRNG fills 4 KiB at a time,
 * as Node's own `randomUUID` does: one `getRandomValues` call cost about 2 %
 * of the CPU of a request, and every request makes at least one id (its
 * request id). Bytes handed out are never handed out again (the pool moves
 * past them). Keys and secrets (`randomBase62`) do not come from the pool, so
 * no secret sits in memory before it exists.
 */
const POOL_BYTES = 4096
let pool = new Uint8Array(0)
let offset = 0

const pooledBytes = (count: number): Uint8Array => {
  if (offset + count > pool.length) {
    pool = crypto.getRandomValues(new Uint8Array(POOL_BYTES))
    offset = 0
  }
  offset += count
  return pool.subarray(offset - count, offset)
}

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

export const newId = (prefix: string): string => `${prefix}_${base62Of(pooledBytes(16))}`

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
