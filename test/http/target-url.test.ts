// Runs once: no database (left out of the PostgreSQL pass, vitest.config.ts).
import { Effect, Either } from "effect"
import { describe, expect, it } from "vitest"
import { checkTargetUrl, isPublicAddress } from "../../src/platform/TargetUrl.ts"

/**
 * The outbound address policy itself (src/platform/TargetUrl.ts) over tables
 * of literals and URL forms. The same function decides at the URL check and
 * at connect time (target-connect.test.ts) and through the API (ssrf.test.ts).
 */

/** Teredo: server IPv4 in bits 32-63, client IPv4 inverted in the last 32 bits. */
const teredo = (server: string, client: string) => {
  const words = (ip: string, invert: number) => {
    const [a, b, c, d] = ip.split(".").map(Number) as [number, number, number, number]
    return [((a << 8) | b) ^ invert, ((c << 8) | d) ^ invert].map((w) => w.toString(16))
  }
  return `2001:0:${words(server, 0).join(":")}:8000:63bf:${words(client, 0xffff).join(":")}`
}

const REFUSED: ReadonlyArray<string> = [
  // IPv4: loopback, private, link-local (cloud metadata), CGNAT, unspecified, broadcast, multicast
  "127.0.0.1",
  "127.255.255.254",
  "10.0.0.1",
  "172.16.0.1",
  "172.31.255.255",
  "192.168.1.1",
  "169.254.169.254",
  "100.64.0.1",
  "0.0.0.0",
  "0.1.2.3",
  "255.255.255.255",
  "224.0.0.1",
  "239.255.255.250",
  // IPv4: reserved, benchmarking, documentation, IETF protocol assignments
  "240.0.0.1",
  "198.18.0.1",
  "192.0.2.1",
  "198.51.100.1",
  "203.0.113.1",
  "192.0.0.8",
  // IPv6: unspecified, loopback, link-local, unique-local, site-local, multicast, discard, documentation, benchmarking
  "::",
  "::1",
  "fe80::1",
  "fc00::1",
  "fd12:3456::1",
  "fec0::1",
  "ff02::1",
  "100::1",
  "2001:db8::1",
  "3fff::1",
  "2001:2::1",
  // Unassigned (outside 2000::/3)
  "4000::1",
  "e000::1",
  // IPv4-mapped, dotted and hex
  "::ffff:127.0.0.1",
  "::ffff:7f00:1",
  "::ffff:10.0.0.1",
  "::ffff:169.254.169.254",
  "::ffff:0.0.0.0",
  // IPv4-compatible (deprecated): refused whatever it carries
  "::127.0.0.1",
  "::7f00:1",
  "::10.0.0.1",
  "::a9fe:a9fe",
  "::8.8.8.8",
  // IPv4-translated (RFC 6145)
  "::ffff:0:7f00:1",
  // NAT64 well-known prefix with a non-public IPv4; the local-use prefix whatever it carries
  "64:ff9b::127.0.0.1",
  "64:ff9b::7f00:1",
  "64:ff9b::a9fe:a9fe",
  "64:ff9b::a00:1",
  "64:ff9b:1::7f00:1",
  "64:ff9b:1::808:808",
  // 6to4 with a non-public IPv4
  "2002:7f00:1::",
  "2002:7f00:1::1",
  "2002:a00:1::1",
  "2002:c0a8:101::1",
  "2002:a9fe:a9fe::1",
  // Teredo with a non-public client or server
  teredo("65.54.227.120", "127.0.0.1"),
  teredo("65.54.227.120", "10.0.0.1"),
  teredo("10.0.0.1", "8.8.8.8"),
  // Not IP literals
  "localhost",
  "example.com",
  ""
]

const ALLOWED: ReadonlyArray<string> = [
  "8.8.8.8",
  "1.1.1.1",
  "93.184.215.14",
  "2606:4700::1111",
  "2001:4860:4860::8888",
  "::ffff:8.8.8.8",
  "::ffff:808:808",
  "64:ff9b::8.8.8.8",
  "2002:808:808::1",
  teredo("65.54.227.120", "8.8.8.8")
]

const check = (url: string, allowPrivate = false) => Effect.runSync(Effect.either(checkTargetUrl(url, allowPrivate)))

describe("isPublicAddress", () => {
  it.each(REFUSED)("refuses %s", (address) => {
    expect(isPublicAddress(address)).toBe(false)
  })

  it.each(ALLOWED)("allows %s", (address) => {
    expect(isPublicAddress(address)).toBe(true)
  })
})

describe("checkTargetUrl with private targets refused", () => {
  const refused = [
    // Forms URL normalises to 127.0.0.1: decimal, octal, hex, short, trailing dot
    "http://2130706433/",
    "http://0177.0.0.1/",
    "http://0x7f.1/",
    "http://0x7f000001/",
    "http://127.1/",
    "http://127.0.0.1./",
    "http://10.1/",
    "http://0/",
    "http://0.0.0.0/",
    "http://169.254.169.254/latest/meta-data/",
    // Local names, trailing dots included
    "http://localhost/",
    "http://LOCALHOST:8080/",
    "http://localhost./",
    "http://localhost../",
    "http://api.localhost/",
    "http://metadata.google.internal/",
    "http://printer.local/",
    "http://intranet/",
    // IPv6 literals and IPv4 inside IPv6
    "http://[::1]/",
    "http://[::]/",
    "http://[fe80::1]/",
    "http://[fd00::1]/",
    "http://[::ffff:127.0.0.1]/",
    "http://[::ffff:7f00:1]/",
    "http://[::127.0.0.1]:8080/x",
    "http://[::7f00:1]/",
    "http://[0:0:0:0:0:0:127.0.0.1]/",
    "http://[64:ff9b::127.0.0.1]/",
    "http://[64:ff9b:1::7f00:1]/",
    "http://[2002:7f00:1::]/",
    `http://[${teredo("65.54.227.120", "127.0.0.1")}]/`
  ]

  it.each(refused)("refuses %s", (url) => {
    const result = check(url)
    expect(Either.isLeft(result)).toBe(true)
    if (Either.isLeft(result)) {
      expect(result.left).toMatchObject({ status: 400, code: "invalid_request" })
      expect(result.left.message).toMatch(/private, loopback and local addresses are not allowed/)
    }
  })

  it("refuses other schemes and credentials, with or without private targets", () => {
    for (const allow of [false, true]) {
      for (
        const url of [
          "ftp://example.com/a.png",
          "file:///etc/passwd",
          "gopher://example.com/",
          "https://user:pw@example.com/",
          "not a url"
        ]
      ) {
        expect(Either.isLeft(check(url, allow)), `${url} allow=${allow}`).toBe(true)
      }
    }
  })

  it("allows public names and addresses, and returns the normalised URL", () => {
    for (
      const url of [
        "https://example.com/a.png",
        "https://example.com./a.png",
        "http://8.8.8.8/",
        "http://[2606:4700::1111]/",
        "http://[::ffff:8.8.8.8]/",
        "http://[64:ff9b::8.8.8.8]/"
      ]
    ) {
      expect(Either.isRight(check(url)), url).toBe(true)
    }
    expect(Either.getOrThrow(check("http://[::ffff:8.8.8.8]:80/a")).href).toBe("http://[::ffff:808:808]/a")
  })

  it("with private targets allowed, private addresses pass", () => {
    for (const url of ["http://127.0.0.1:8080/", "http://[::127.0.0.1]/", "http://localhost/"]) {
      expect(Either.isRight(check(url, true)), url).toBe(true)
    }
  })
})
