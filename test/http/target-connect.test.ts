// Runs once: no database (left out of the PostgreSQL pass, vitest.config.ts).
import { HttpClientRequest } from "@effect/platform"
import { NodeContext } from "@effect/platform-node"
import { Effect, Either } from "effect"
import type { LookupAddress } from "node:dns"
import { mkdtempSync, rmSync } from "node:fs"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { RemoteMedia } from "../../src/media/RemoteMedia.ts"
import { AppConfig } from "../../src/platform/AppConfig.ts"
import { TargetHttpClient } from "../../src/platform/TargetHttpClient.ts"
import { guardedLookup, makeTargetHttpClient, PRIVATE_TARGET } from "../../src/runtime/node/TargetHttpClient.ts"

/**
 * The address policy where a connection is made: the guarded lookup (names)
 * and the guarded agents (literal addresses, which Node never looks up) of
 * the runtime's TargetHttpClient, and the reference fetcher's redirect hops.
 * Only a server on 127.0.0.1 is contacted; other names come from resolvers
 * under the test's control.
 */

let server: Server
let port: number
let connections = 0
const hits: Array<string> = []
beforeAll(async () => {
  server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://x")
    hits.push(url.pathname)
    if (url.pathname === "/start") {
      res.writeHead(302, { location: url.searchParams.get("to") ?? "/final" }).end()
      return
    }
    res.writeHead(200, { "content-type": "text/plain" }).end("hello")
  })
  server.on("connection", () => connections++)
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done))
  port = (server.address() as AddressInfo).port
})
afterAll(() => new Promise<void>((done) => server.close(() => done())))
beforeEach(() => {
  connections = 0
  hits.length = 0
})

/** A resolver that answers `answers[hostname]` (one address or several) and nothing else. */
const resolver = (answers: Record<string, string | Array<string>>) =>
  ((hostname: string, options: any, callback: any) => {
    const found = answers[hostname]
    if (found === undefined) return callback(Object.assign(new Error(`ENOTFOUND ${hostname}`), { code: "ENOTFOUND" }))
    const all: Array<LookupAddress> = [found].flat().map((address) => ({
      address,
      family: address.includes(":") ? 6 : 4
    }))
    return options?.all ? callback(null, all) : callback(null, all[0]!.address, all[0]!.family)
  }) as any

const lookupWith = (base: any, hostname: string) =>
  new Promise<{ code?: string; addresses?: unknown }>((done) =>
    guardedLookup(base)(
      hostname,
      { all: true } as any,
      (err: any, addresses: any) => done(err ? { code: err.code } : { addresses })
    )
  )

/** GET through a TargetHttpClient: the status, or the code the connection failed with. */
const get = (allowPrivate: boolean, url: string, resolve: any = resolver({})) =>
  Effect.runPromise(Effect.scoped(Effect.gen(function*() {
    const client = yield* makeTargetHttpClient(allowPrivate, resolve)
    return yield* client.execute(HttpClientRequest.get(url)).pipe(
      Effect.map((r) => r.status as number | string),
      Effect.catchAll((e) => Effect.succeed(String((e as any).cause?.code ?? e)))
    )
  })))

describe("the guarded lookup", () => {
  it("refuses localhost through the system resolver", async () => {
    expect(await lookupWith(undefined, "localhost")).toEqual({ code: PRIVATE_TARGET })
  })

  it("refuses a name whose answer is a non-public address in any IPv6 spelling, and passes public ones", async () => {
    const refused = [
      "::7f00:1",
      "::ffff:7f00:1",
      "::ffff:a9fe:a9fe",
      "64:ff9b::7f00:1",
      "64:ff9b:1::a00:1",
      "2002:7f00:1::1",
      "2001:0:4136:e378:8000:63bf:80ff:fffe",
      "::",
      "::1",
      "fe80::1",
      "fd00::1",
      "0.0.0.0",
      "169.254.169.254",
      "100.64.0.1"
    ]
    for (const address of refused) {
      expect(await lookupWith(resolver({ "public.example": ["93.184.215.14", address] }), "public.example"), address)
        .toEqual({ code: PRIVATE_TARGET })
    }
    for (const address of ["93.184.215.14", "2606:4700::1111", "64:ff9b::808:808"]) {
      expect(await lookupWith(resolver({ "public.example": address }), "public.example"), address).toMatchObject({
        addresses: [{ address }]
      })
    }
  })
})

describe("the guarded agents", () => {
  it("refuse a literal non-public address before connecting, over http and https", async () => {
    for (const host of ["127.0.0.1", "[::ffff:127.0.0.1]", "[::ffff:7f00:1]", "[::7f00:1]", "[::1]", "0.0.0.0"]) {
      for (const scheme of ["http", "https"]) {
        expect(await get(false, `${scheme}://${host}:${port}/final`), `${scheme} ${host}`).toBe(PRIVATE_TARGET)
      }
    }
    expect(connections).toBe(0)
    // The IPv4-mapped form does reach the loopback server when nothing refuses it.
    expect(await get(true, `http://[::ffff:127.0.0.1]:${port}/final`)).toBe(200)
    expect(connections).toBe(1)
  })

  it("refuse a name that resolves to an IPv4-mapped loopback address", async () => {
    const dns = resolver({ "rebind.example": "::ffff:7f00:1" })
    expect(await get(false, `http://rebind.example:${port}/final`, dns)).toBe(PRIVATE_TARGET)
    expect(connections).toBe(0)
    expect(await get(true, `http://rebind.example:${port}/final`, dns)).toBe(200)
  })

  it("follow no redirect (webhook deliveries rely on it)", async () => {
    expect(await get(true, `http://127.0.0.1:${port}/start?to=/final`)).toBe(302)
    expect(hits).toEqual(["/start"])
  })
})

describe("reference fetching across redirects", () => {
  let dir: string
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "target-connect-"))
  })
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  const config = { allowPrivateTargets: false, limits: { uploads: { fetch_max_redirects: 3, fetch_timeout_s: 10 } } }

  /**
   * RemoteMedia with private targets refused, over a transport that refuses
   * nothing and resolves public.example to the loopback server: the first
   * hop gets through, so a refusal of the second can only be the hop check.
   */
  const fetchFrom = (to: string) =>
    Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const client = yield* makeTargetHttpClient(true, resolver({ "public.example": "127.0.0.1" }))
      const remote = yield* RemoteMedia.pipe(
        Effect.provide(RemoteMedia.layer),
        Effect.provideService(TargetHttpClient, client),
        Effect.provideService(AppConfig, config as never),
        Effect.provide(NodeContext.layer)
      )
      const start = `http://public.example:${port}/start?to=${encodeURIComponent(to)}`
      return yield* Effect.either(remote.fetchToFile(start, { maxBytes: 1000, file: join(dir, "media") }))
    })))

  it("a redirect to a public-looking name is followed", async () => {
    const result = await fetchFrom(`http://public.example:${port}/final`)
    expect(Either.getOrThrow(result).sizeBytes).toBe(5)
    expect(hits).toEqual(["/start", "/final"])
  })

  it.each([
    "http://[::127.0.0.1]:PORT/final",
    "http://[::ffff:127.0.0.1]:PORT/final",
    "http://127.0.0.1:PORT/final",
    "http://127.1:PORT/final",
    "http://2130706433:PORT/final",
    "http://0x7f.1:PORT/final",
    "http://localhost.:PORT/final",
    "http://[::1]:PORT/final",
    "http://[64:ff9b::7f00:1]:PORT/final",
    "http://169.254.169.254/latest/meta-data/",
    "//127.0.0.1:PORT/final"
  ])("a redirect to %s is refused before it is requested", async (location) => {
    const result = await fetchFrom(location.replace("PORT", String(port)))
    expect(Either.isLeft(result)).toBe(true)
    if (Either.isLeft(result)) {
      expect(result.left).toMatchObject({ transient: false })
      expect(result.left.message).toMatch(/its URL is refused: private, loopback and local addresses are not allowed/)
    }
    expect(hits).toEqual(["/start"])
    expect(connections).toBe(1)
  })
})
