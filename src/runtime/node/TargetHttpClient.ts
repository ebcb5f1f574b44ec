import { NodeHttpClient } from "@effect/platform-node"
import { Config, Effect, Layer } from "effect"
import { lookup as dnsLookup, type LookupAddress } from "node:dns"
import * as Http from "node:http"
import * as Https from "node:https"
import { isIP, type LookupFunction } from "node:net"
import type { Duplex } from "node:stream"
import { TargetHttpClient } from "../../platform/TargetHttpClient.ts"
import { isPublicAddress, PRIVATE_TARGET } from "../../platform/TargetUrl.ts"

export { PRIVATE_TARGET }

const refusal = (message: string) =>
  Object.assign(new Error(`${message}; refused (ALLOW_PRIVATE_TARGETS is false)`), { code: PRIVATE_TARGET })

/**
 * A `lookup` for sockets that resolves every address of the name and refuses
 * the connection when any of them is not public (`isPublicAddress`: loopback,
 * private, link-local, IPv4 inside IPv6, ...). Checking the answer the
 * socket then connects to leaves no window between check and use.
 */
export const guardedLookup = (base: typeof dnsLookup = dnsLookup): LookupFunction => (hostname, options, callback) => {
  base(hostname, { ...options, all: true }, (error, found) => {
    if (error) return callback(error, "", 0)
    const addresses = found as unknown as Array<LookupAddress>
    const refused = addresses.find((a) => !isPublicAddress(a.address))
    if (refused !== undefined || addresses.length === 0) {
      const reason = refused === undefined ? "no address" : `${refused.address}, not a public address`
      return callback(refusal(`${hostname} resolves to ${reason}`), "", 0)
    }
    if (options.all) return callback(null, addresses)
    return callback(null, addresses[0]!.address, addresses[0]!.family)
  })
}

type ConnectCallback = (err: Error | null, stream: Duplex) => void

/**
 * Node connects to an IP literal without calling `lookup`, so the agents
 * check a literal host themselves before a socket is made (names go through
 * the guarded lookup): every connection is checked, whatever the URL check
 * before it let through. True when the connection was refused.
 */
const refusedLiteral = (options: Http.ClientRequestArgs, callback: ConnectCallback | undefined) => {
  const host = options.host ?? options.hostname ?? ""
  if (isIP(host) === 0 || isPublicAddress(host)) return false
  // The agent's documented way to fail a connection: the error to its callback, no socket.
  callback?.(refusal(`${host} is not a public address`), undefined as never)
  return true
}

class GuardedHttpAgent extends Http.Agent {
  override createConnection(options: Http.ClientRequestArgs, callback?: ConnectCallback) {
    return refusedLiteral(options, callback) ? undefined : super.createConnection(options, callback)
  }
}

class GuardedHttpsAgent extends Https.Agent {
  override createConnection(options: Https.RequestOptions, callback?: ConnectCallback) {
    return refusedLiteral(options, callback) ? undefined : super.createConnection(options, callback)
  }
}

/**
 * The Node `TargetHttpClient`: `node:http`/`node:https` (which follow no
 * redirects) through agents that, unless private targets are allowed, refuse
 * to connect to a non-public literal address or a name that resolves to one.
 * No keep-alive: receivers are many and called rarely, and a pooled socket
 * would skip the check. `resolve` replaces the system resolver (tests).
 */
export const makeTargetHttpClient = (allowPrivate: boolean, resolve: typeof dnsLookup = dnsLookup) =>
  Effect.gen(function*() {
    const options = { keepAlive: false, lookup: allowPrivate ? (resolve as LookupFunction) : guardedLookup(resolve) }
    const [http, https] = allowPrivate
      ? [new Http.Agent(options), new Https.Agent(options)]
      : [new GuardedHttpAgent(options), new GuardedHttpsAgent(options)]
    yield* Effect.addFinalizer(() => Effect.sync(() => (http.destroy(), https.destroy())))
    const agent = NodeHttpClient.HttpAgent.of({
      [NodeHttpClient.HttpAgentTypeId]: NodeHttpClient.HttpAgentTypeId,
      http,
      https
    })
    return yield* Effect.provideService(NodeHttpClient.make, NodeHttpClient.HttpAgent, agent)
  })

/** The runtime's layer, following `ALLOW_PRIVATE_TARGETS` (default false). */
export const TargetHttpClientLive = Layer.scoped(
  TargetHttpClient,
  Effect.flatMap(
    Config.withDefault(Config.boolean("ALLOW_PRIVATE_TARGETS"), false),
    (allow) => makeTargetHttpClient(allow)
  )
)
