import { Effect, Schema } from "effect"
import ipaddr from "ipaddr.js"
import { failure } from "./Failure.ts"

/**
 * The one address policy for every outbound request to a URL a caller or an
 * account owner chose (webhook receivers, reference media, image inputs):
 * the URL check below when the URL is accepted and before each fetch or
 * redirect hop, and `isPublicAddress` again when the connection is made, on
 * the literal host or on every address the name resolves to
 * (src/runtime/node/TargetHttpClient.ts).
 */

/** The error code a connection to a non-public address is refused with. */
export const PRIVATE_TARGET = "EPRIVATETARGET"

const fromWords = (high: number, low: number) => new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff])

// All IPv6 global unicast is in 2000::/3 (RFC 4291, IANA); the rest is unassigned or special.
const GLOBAL_UNICAST = ipaddr.parseCIDR("2000::/3")

/**
 * The IPv4 addresses an IPv6 transition address delivers to, for the ranges
 * that embed one. ipaddr.js names these ranges but extracts the IPv4 only of
 * IPv4-mapped addresses (`process` does that), so the layouts of their RFCs
 * are read here. `undefined`: the range is refused whatever it embeds.
 */
const embeddedIPv4 = (address: ipaddr.IPv6): ReadonlyArray<ipaddr.IPv4> | undefined => {
  const p = address.parts
  switch (address.range()) {
    // NAT64 (RFC 6052). The well-known 64:ff9b::/96 carries the IPv4 in its
    // last 32 bits; DNS64 resolvers answer public IPv4-only names with it. The
    // local-use 64:ff9b:1::/48 (RFC 8215) is a site's own translator and puts
    // the IPv4 where the site chooses: refused.
    case "rfc6052":
      return p[1] === 0xff9b && p[2] === 0 ? [fromWords(p[6]!, p[7]!)] : undefined
    // 6to4 (RFC 3056): 2002:AABB:CCDD::/48 routes to the relay at A.B.C.D.
    case "6to4":
      return [fromWords(p[1]!, p[2]!)]
    // Teredo (RFC 4380): the server's IPv4 in bits 32-63, the client's
    // (the packets' destination) in the last 32 bits, inverted.
    case "teredo":
      return [fromWords(p[2]!, p[3]!), fromWords(p[6]! ^ 0xffff, p[7]! ^ 0xffff)]
    default:
      return undefined
  }
}

/**
 * An IPv6 literal in the spelling `URL` gives it, because ipaddr.js reads
 * "::1.2.3.4" (IPv4-compatible) as "::ffff:1.2.3.4" (IPv4-mapped), another
 * address. `undefined` when it is no valid IPv6 literal (a zone id, say).
 */
const canonical = (address: string): string | undefined => {
  if (!address.includes(":")) return address
  try {
    return new URL(`http://[${address}]/`).hostname.slice(1, -1)
  } catch {
    return undefined
  }
}

/**
 * Whether an IP literal is a public unicast address. Refused: loopback,
 * private, link-local, unspecified, multicast, broadcast, carrier-grade NAT,
 * benchmarking, documentation and other reserved ranges, in IPv4 and IPv6,
 * and IPv6 forms that carry an IPv4 address unless that address is public:
 * IPv4-mapped (`::ffff:127.0.0.1`), NAT64, 6to4 and Teredo. The deprecated
 * IPv4-compatible form (`::127.0.0.1`, RFC 4291 2.5.5.1) is outside
 * 2000::/3 and refused whatever it carries: some stacks tunnel it to the
 * IPv4 address. Anything that is not an IP literal is not public.
 */
export const isPublicAddress = (address: string): boolean => {
  const literal = canonical(address)
  if (literal === undefined || !ipaddr.isValid(literal)) return false
  // `process` turns an IPv4-mapped IPv6 address into its IPv4 address.
  const parsed = ipaddr.process(literal)
  if (parsed.kind() === "ipv4") return parsed.range() === "unicast"
  const v6 = parsed as ipaddr.IPv6
  if (v6.range() === "unicast") return v6.match(GLOBAL_UNICAST)
  const embedded = embeddedIPv4(v6)
  return embedded !== undefined && embedded.every((v4) => v4.range() === "unicast")
}

/** Host names that are local by convention, whatever a resolver answers for them. */
const LOCAL_NAMES = /(^|\.)(localhost|localdomain|internal|local)$/i

/**
 * Whether a URL's host (as `URL` normalised it) may be called: a public IP
 * literal, or a name with a dot that is not a local name. Names are checked
 * again by address when the connection is made.
 */
const isPublicHost = (hostname: string): boolean => {
  // `URL` already rewrote decimal, octal, hex and short IPv4 forms to dotted
  // quads and IPv6 to its compressed form. Trailing dots are the same name
  // fully qualified ("localhost." is localhost).
  const host = hostname.replace(/^\[|\]$/g, "").replace(/\.+$/, "")
  if (ipaddr.isValid(host)) return isPublicAddress(host)
  return host.includes(".") && !LOCAL_NAMES.test(host)
}

/** A URL the service would call or fetch that it must not: its owner (webhooks, references) says where it came from. */
export class InvalidTargetUrl extends Schema.TaggedError<InvalidTargetUrl>()("InvalidTargetUrl", {
  ...failure(400, "invalid_request"),
  message: Schema.String
}) {}

/**
 * First check of a URL the service will call (webhooks) or fetch
 * (references, image inputs, each redirect hop): http(s) only, no
 * credentials, and no private address or local name unless the operator
 * allows private targets. Returns the parsed URL: request that, not the raw
 * string, so what was checked is what is fetched.
 */
export const checkTargetUrl = (raw: string, allowPrivate: boolean) =>
  Effect.gen(function*() {
    const invalid = (why: string) => new InvalidTargetUrl({ message: `Invalid URL "${raw}": ${why}.` })
    let url: URL
    try {
      url = new URL(raw)
    } catch {
      return yield* invalid("not an absolute URL")
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") return yield* invalid("only http and https are allowed")
    if (url.username || url.password) return yield* invalid("credentials in the URL are not allowed")
    if (!allowPrivate && !isPublicHost(url.hostname)) {
      return yield* invalid("private, loopback and local addresses are not allowed")
    }
    return url
  })
