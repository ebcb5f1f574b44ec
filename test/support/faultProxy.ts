import net from "node:net"

/**
 * What the proxy does to connections:
 * - `pass`: forwards both ways, as if it were not there;
 * - `refuse`: nothing listens on its port (ECONNREFUSED); open connections are reset;
 * - `reset`: a new connection is reset as soon as it is accepted; open ones are reset too;
 * - `stall`: connections stay open (new ones are accepted) but no byte moves either way until
 *   the mode changes, when they flow again;
 * - `blackhole`: connections are accepted and whatever they send is read and dropped, never
 *   answered; open ones are black-holed too (and reset when the mode changes: they were cut mid-stream).
 */
export type FaultMode = "pass" | "refuse" | "reset" | "stall" | "blackhole"

export interface FaultProxy {
  /** The proxy's port on 127.0.0.1, to put in the gateway's configuration in place of the target's. */
  readonly port: number
  readonly mode: () => FaultMode
  /** Switches mode; resolves once the listener is closed (`refuse`) or listening again. */
  readonly set: (mode: FaultMode) => Promise<void>
  /** Resets every open connection (both sides) without changing the mode: a network cut. */
  readonly cut: () => void
  /** Connections accepted so far. */
  readonly accepted: () => number
  readonly close: () => Promise<void>
}

interface Pair {
  readonly client: net.Socket
  upstream: net.Socket | undefined
  /** Black-holed or stalled: piping undone, to be reset (black hole) or piped again (stall) when the mode changes. */
  held: "blackhole" | "stall" | undefined
}

const listen = (server: net.Server, port: number) =>
  new Promise<void>((done, fail) => {
    server.once("error", fail)
    server.listen(port, "127.0.0.1", () => {
      server.off("error", fail)
      done()
    })
  })

const reset = (socket: net.Socket | undefined) => {
  if (socket !== undefined && !socket.destroyed) socket.resetAndDestroy()
}

/**
 * A loopback TCP proxy in front of `target` (PostgreSQL, S3, a fake
 * provider) that refuses, resets, stalls or black-holes connections on
 * command: the faults of a network the gateway must ride out, made real at
 * the socket level (the gateway sees ECONNREFUSED, ECONNRESET, silence).
 */
export const startFaultProxy = async (
  target: { readonly host?: string; readonly port: number }
): Promise<FaultProxy> => {
  let mode: FaultMode = "pass"
  let accepted = 0
  const pairs = new Set<Pair>()

  const pipe = (pair: Pair) => {
    const { client, upstream } = pair
    if (upstream === undefined) return
    client.pipe(upstream)
    upstream.pipe(client)
    client.resume()
    upstream.resume()
  }
  const unpipe = (pair: Pair) => {
    pair.client.unpipe()
    pair.upstream?.unpipe()
  }
  const blackhole = (pair: Pair) => {
    unpipe(pair)
    pair.held = "blackhole"
    pair.client.on("data", () => {})
    pair.client.resume()
    // The target's answers, if any, are dropped too.
    pair.upstream?.on("data", () => {})
    pair.upstream?.resume()
  }
  const stall = (pair: Pair) => {
    unpipe(pair)
    pair.held = "stall"
    pair.client.pause()
    pair.upstream?.pause()
  }
  const drop = (pair: Pair) => {
    reset(pair.client)
    reset(pair.upstream)
    pairs.delete(pair)
  }

  const onConnection = (client: net.Socket) => {
    accepted++
    if (mode === "reset" || mode === "refuse") return reset(client)
    const pair: Pair = { client, upstream: undefined, held: undefined }
    pairs.add(pair)
    client.on("error", () => drop(pair))
    client.on("close", () => drop(pair))
    if (mode === "blackhole") return blackhole(pair)
    client.pause()
    const upstream = net.connect({ host: target.host ?? "127.0.0.1", port: target.port })
    pair.upstream = upstream
    upstream.on("error", () => drop(pair))
    upstream.on("close", () => drop(pair))
    upstream.once("connect", () => {
      if (pair.held === "blackhole") return
      if (mode === "stall") return stall(pair)
      if (mode === "blackhole") return blackhole(pair)
      pipe(pair)
    })
  }

  let server = net.createServer(onConnection)
  await listen(server, 0)
  const port = (server.address() as net.AddressInfo).port

  const closeListener = () =>
    new Promise<void>((done) => {
      server.close(() => done())
    })

  const set = async (next: FaultMode) => {
    const previous = mode
    mode = next
    if (next === previous) return
    if (next === "refuse") {
      // Closed listener first (no new connection slips in), then the open ones reset: the close's
      // callback waits for every connection to end.
      const closed = closeListener()
      for (const pair of [...pairs]) drop(pair)
      await closed
    }
    if (previous === "refuse") {
      server = net.createServer(onConnection)
      await listen(server, port)
    }
    for (const pair of [...pairs]) {
      if (next === "refuse" || next === "reset") drop(pair)
      else if (next === "blackhole") blackhole(pair)
      else if (next === "stall" && pair.held === undefined) stall(pair)
      else if (next === "pass" && pair.held === "stall") {
        pair.held = undefined
        pipe(pair)
      } else if (next === "pass" && pair.held === "blackhole") drop(pair)
    }
  }

  return {
    port,
    mode: () => mode,
    set,
    cut: () => [...pairs].forEach(drop),
    accepted: () => accepted,
    close: async () => {
      for (const pair of [...pairs]) drop(pair)
      if (mode !== "refuse") await closeListener()
    }
  }
}
