import { Effect } from "effect"
import ipaddr from "ipaddr.js"
import * as Errors from "../api/Errors.ts"

/**
 * Whether an IP literal is a public unicast address. Loopback, private,
 * link-local, unique-local, carrier-grade NAT and the rest are not.
 */
export const isPublicAddress = (address: string): boolean => {
  if (!ipaddr.isValid(address)) return false
  const parsed = ipaddr.process(address)
  return parsed.range() === "unicast"
}

const LOCAL_NAMES = /(^|\.)(localhost|localdomain|internal|local)$/i

/**
 * First check of a URL the service will call (webhooks) or fetch (references):
 * http(s) only, no credentials, and no literal private address or local name
 * unless the operator allows private targets. Names are resolved and checked
 * again when the connection is made.
 */
export const checkTargetUrl = (raw: string, allowPrivate: boolean) =>
  Effect.gen(function*() {
    const invalid = (why: string) => Errors.badRequest("invalid_request", `Invalid URL "${raw}": ${why}.`)
    let url: URL
    try {
      url = new URL(raw)
    } catch {
      return yield* invalid("not an absolute URL")
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") return yield* invalid("only http and https are allowed")
    if (url.username || url.password) return yield* invalid("credentials in the URL are not allowed")
    if (allowPrivate) return url
    // A trailing dot is the same name, fully qualified ("localhost." is localhost).
    const host = url.hostname.replace(/^\[|\]$/g, "").replace(/\.$/, "")
    if (ipaddr.isValid(host) ? !isPublicAddress(host) : LOCAL_NAMES.test(host) || !host.includes(".")) {
      return yield* invalid("private, loopback and local addresses are not allowed")
    }
    return url
  })
