// Runs once: no database (left out of the PostgreSQL pass, vitest.config.ts).
import net from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { eventually, sleep } from "../support/eventually.ts"
import { type FaultProxy, startFaultProxy } from "../support/faultProxy.ts"

/**
 * The fault proxy the fault tests put between the gateway and what it
 * depends on: each mode is what a client of it sees at the socket (an echo
 * server behind it), so the fault tests can trust what they simulate.
 */

let echo: net.Server
let proxy: FaultProxy

beforeAll(async () => {
  echo = net.createServer((socket) => {
    // The proxy resets connections on purpose; the echo side just lets them go.
    socket.on("error", () => {})
    socket.pipe(socket)
  })
  await new Promise<void>((done) => echo.listen(0, "127.0.0.1", done))
  proxy = await startFaultProxy({ port: (echo.address() as net.AddressInfo).port })
})
afterAll(async () => {
  await proxy?.close()
  await new Promise((done) => echo?.close(done))
})

/** A connection to the proxy, with what it received and how it ended. */
const connect = () =>
  new Promise<{ socket: net.Socket; received: () => string; ended: Promise<string> }>((done, fail) => {
    const socket = net.connect({ host: "127.0.0.1", port: proxy.port })
    let data = ""
    socket.on("data", (chunk) => (data += chunk))
    const ended = new Promise<string>((end) => {
      socket.on("error", (e: NodeJS.ErrnoException) => end(e.code ?? e.message))
      socket.on("close", () => end("closed"))
    })
    socket.once("connect", () => done({ socket, received: () => data, ended }))
    socket.once("error", fail)
  })

/** Until `check` holds, for at most 5 s (a bound, not a speed measurement). */
const arrives = (check: () => boolean, what: string) => eventually(check, what, { deadlineMs: 5_000, intervalMs: 20 })

/** A sleep that is the scenario: the event loop turns a few times, so bytes that would move have moved. */
const settle = () => sleep(300)

describe("the fault proxy", () => {
  it("pass forwards both ways", async () => {
    await proxy.set("pass")
    const c = await connect()
    c.socket.write("hello")
    await arrives(() => c.received() === "hello", "hello")
    c.socket.destroy()
  })

  it("refuse: connections are refused while it lasts, and accepted again on the same port after", async () => {
    await proxy.set("pass")
    const open = await connect()
    await proxy.set("refuse")
    expect(await open.ended).toMatch(/ECONNRESET|closed/)
    await expect(connect()).rejects.toMatchObject({ code: "ECONNREFUSED" })
    await proxy.set("pass")
    const c = await connect()
    c.socket.write("back")
    await arrives(() => c.received() === "back", "back")
    c.socket.destroy()
  })

  it("reset: a new connection is reset at once", async () => {
    await proxy.set("reset")
    // The reset may come before the client saw its connect, or just after: either way it never talks.
    const outcome = await connect().then(
      async (c) => ({ ended: await c.ended, received: c.received() }),
      (e: NodeJS.ErrnoException) => ({ ended: e.code, received: "" })
    )
    expect(outcome.ended).toMatch(/ECONNRESET|closed/)
    expect(outcome.received).toBe("")
    await proxy.set("pass")
  })

  it("stall: nothing moves while it lasts; the bytes flow when it ends", async () => {
    await proxy.set("pass")
    const c = await connect()
    c.socket.write("one")
    await arrives(() => c.received() === "one", "one")
    await proxy.set("stall")
    c.socket.write("two")
    await settle()
    expect(c.received()).toBe("one")
    await proxy.set("pass")
    await arrives(() => c.received() === "onetwo", "onetwo")
    c.socket.destroy()
  })

  it("blackhole: bytes are taken and never answered; after it, that connection is reset and new ones work", async () => {
    await proxy.set("blackhole")
    const c = await connect()
    c.socket.write("into the void")
    await settle()
    expect(c.received()).toBe("")
    await proxy.set("pass")
    expect(await c.ended).toMatch(/ECONNRESET|closed/)
    const d = await connect()
    d.socket.write("again")
    await arrives(() => d.received() === "again", "again")
    d.socket.destroy()
  })

  it("cut resets the open connections and leaves the mode as it was", async () => {
    await proxy.set("pass")
    const c = await connect()
    const before = proxy.accepted()
    proxy.cut()
    expect(await c.ended).toMatch(/ECONNRESET|closed/)
    const d = await connect()
    d.socket.write("still passing")
    await arrives(() => d.received() === "still passing", "still passing")
    expect(proxy.accepted()).toBe(before + 1)
    d.socket.destroy()
  })
})
