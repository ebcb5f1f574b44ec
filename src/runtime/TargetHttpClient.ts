import { NodeHttpClient } from "@effect/platform-node"
import { Config, Effect, Layer } from "effect"
import { lookup as dnsLookup, type LookupAddress } from "node:dns"
import type { LookupFunction } from "node:net"
import { isPublicAddress } from "../domain/TargetUrl.ts"
import { TargetHttpClient } from "../services/TargetHttpClient.ts"

/** The error code a refused resolution fails the connection with. */
export const PRIVATE_TARGET = "EPRIVATETARGET"

/**
 * A `lookup` for sockets that resolves every address of the name and refuses
 * the connection when any of them is not a public unicast address (loopback,
 * private, link-local, unique-local, CGNAT, ...). Checking the answer the
 * socket then connects to leaves no window between check and use.
 */
export const guardedLookup = (base: typeof dnsLookup = dnsLookup): LookupFunction => (hostname, options, callback) => {
  base(hostname, { ...options, all: true }, (error, found) => {
    if (error) return callback(error, "", 0)
    const addresses = found as unknown as Array<LookupAddress>
    const refused = addresses.find((a) => !isPublicAddress(a.address))
    if (refused !== undefined || addresses.length === 0) {
      const reason = refused === undefined ? "no address" : `${refused.address}, not a public address`
      const failure = Object.assign(
        new Error(`${hostname} resolves to ${reason}; refused (ALLOW_PRIVATE_TARGETS is false)`),
        { code: PRIVATE_TARGET }
      )
      return callback(failure, "", 0)
    }
    if (options.all) return callback(null, addresses)
    return callback(null, addresses[0]!.address, addresses[0]!.family)
  })
}

/**
 * The Node `TargetHttpClient`: `node:http`/`node:https` (which follow no
 * redirects) through agents whose DNS lookup is guarded unless private
 * targets are allowed. No keep-alive: receivers are many and called rarely,
 * and a pooled socket would skip the lookup. `resolve` replaces the system
 * resolver (tests).
 */
export const makeTargetHttpClient = (allowPrivate: boolean, resolve: typeof dnsLookup = dnsLookup) =>
  Effect.gen(function*() {
    const agent = yield* NodeHttpClient.makeAgent(
      { keepAlive: false, lookup: allowPrivate ? (resolve as LookupFunction) : guardedLookup(resolve) }
    )
    return yield* Effect.provideService(NodeHttpClient.make, NodeHttpClient.HttpAgent, agent)
  })

/** The runtime's layer, following `ALLOW_PRIVATE_TARGETS` (default false). */
export const TargetHttpClientLive = Layer.scoped(
  TargetHttpClient,
  Effect.flatMap(Config.withDefault(Config.boolean("ALLOW_PRIVATE_TARGETS"), false), (allow) => makeTargetHttpClient(allow))
)
