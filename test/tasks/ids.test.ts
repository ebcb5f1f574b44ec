// Runs once: no database (left out of the PostgreSQL pass, vitest.config.ts).
import { describe, expect, it } from "vitest"
import { base62Of, newId, randomBase62 } from "../../src/platform/Ids.ts"

const ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

/** The BigInt conversion base62Of replaced: both must give the same digits. */
const viaBigInt = (bytes: Uint8Array) => {
  let n = 0n
  for (const b of bytes) n = (n << 8n) | BigInt(b)
  let out = ""
  for (let i = 0; i < Math.ceil((bytes.length * 8) / Math.log2(62)); i++) {
    out = ALPHABET[Number(n % 62n)] + out
    n /= 62n
  }
  return out
}

describe("ids", () => {
  it("base62Of gives the digits of the bytes as one big-endian number, fixed width", () => {
    expect(base62Of(new Uint8Array(16))).toBe("0".repeat(22))
    for (const bytes of [new Uint8Array(16).fill(255), new Uint8Array(24).fill(255), Uint8Array.of(1, 0)]) {
      expect(base62Of(bytes.slice())).toBe(viaBigInt(bytes))
    }
    for (let i = 0; i < 2000; i++) {
      const bytes = crypto.getRandomValues(new Uint8Array(i % 2 ? 16 : 24))
      expect(base62Of(bytes.slice())).toBe(viaBigInt(bytes))
    }
  })

  it("ids keep their shape", () => {
    expect(newId("req")).toMatch(/^req_[0-9A-Za-z]{22}$/)
    expect(randomBase62(24)).toMatch(/^[0-9A-Za-z]{33}$/)
  })

  it("ids drawn from the random pool never repeat, across its refills", () => {
    // 5000 ids take 80,000 bytes: the 4 KiB pool is refilled about twenty times.
    const ids = Array.from({ length: 5000 }, () => newId("task"))
    expect(new Set(ids).size).toBe(ids.length)
    for (const id of ids) expect(id).toMatch(/^task_[0-9A-Za-z]{22}$/)
    // 128 random bits per id: about half of them set, over all ids, as from the CSPRNG itself.
    const ones = ids.reduce((n, id) => {
      let v = 0n
      for (const c of id.slice(5)) v = v * 62n + BigInt(ALPHABET.indexOf(c))
      return n + v.toString(2).split("").filter((b) => b === "1").length
    }, 0)
    expect(ones / (ids.length * 128)).toBeGreaterThan(0.49)
    expect(ones / (ids.length * 128)).toBeLessThan(0.51)
  })
})
