import { HttpServer } from "@effect/platform"
import { NodeContext } from "@effect/platform-node"
import { ConfigProvider, Effect, Layer, Logger, LogLevel, ManagedRuntime } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import type { ServerOptions } from "node:http"
import { type AddressInfo, createServer as createNetServer } from "node:net"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { gateway } from "../../src/Gateway.ts"
import * as NodeServer from "../../src/runtime/node/NodeServer.ts"
import { NodeServicesLive } from "../../src/runtime/node/NodeServices.ts"
import { type Backend, backend, createDatabase, dropDatabase, seedPglite } from "./database.ts"

export const freePort = () =>
  new Promise<number>((done, fail) => {
    const probe = createNetServer()
    probe.once("error", fail)
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address() as AddressInfo
      probe.close(() => done(address.port))
    })
  })

export const ADMIN_TOKEN = "adm_test_0123456789abcdefghijklmnop"

export interface TestGateway {
  readonly url: string
  readonly dataDir: string
  readonly databaseUrl: string | undefined
  readonly runtime: ManagedRuntime.ManagedRuntime<any, any>
  readonly close: () => Promise<void>
  /** Stops the service but keeps its data directory and database, for a restart (`reuse`). */
  readonly stop: () => Promise<void>
}

/**
 * Boots the whole gateway in this process on a free loopback port, with its
 * own data directory and database, and the repository's `config/` unless a
 * test passes another `CONFIG_DIR`, on the run's database unless `on` names
 * another (see `backends`). Tests talk to it with `fetch`.
 * `server` sets options of the Node HTTP server, e.g. `keepAliveTimeout: 0`
 * so the server never closes an idle kept-alive socket just as the test's
 * fetch reuses it (ECONNRESET on a loaded machine); the client closes it.
 */
export const startGateway = async (
  env: Record<string, string> = {},
  extra?: Layer.Layer<never, unknown>,
  server: ServerOptions = {},
  on: Backend = backend,
  /** The data directory and database of a stopped gateway, to start it again on them. */
  reuse?: Pick<TestGateway, "dataDir" | "databaseUrl">
): Promise<TestGateway> => {
  const dataDir = reuse?.dataDir ?? mkdtempSync(join(tmpdir(), "gw-test-"))
  // The port is chosen first so the gateway's own URLs (PUBLIC_BASE_URL) point at it.
  const port = await freePort()
  const db = reuse !== undefined
    ? { url: reuse.databaseUrl, drop: () => dropDatabase(reuse.databaseUrl) }
    : await createDatabase(on)
  // A new PGlite database starts as a copy of the built template, as under `npm start`, not from initdb.
  if (reuse === undefined && db.url === undefined) seedPglite(dataDir)
  const config = new Map<string, string>([
    ["DATA_DIR", dataDir],
    ["CONFIG_DIR", resolve("config")],
    ["ADMIN_TOKEN", ADMIN_TOKEN],
    ["PUBLIC_BASE_URL", `http://127.0.0.1:${port}`],
    ["ALLOW_PRIVATE_TARGETS", "true"],
    // The API alone unless a test asks for the engine (ROLE=all), so tasks stay where a test put them.
    ["ROLE", "api"],
    ...(db.url ? [["DATABASE_URL", db.url] as const] : []),
    ...Object.entries(env)
  ])
  // One layer value used twice is built once (layers are memoised by reference),
  // so the address read below is the gateway's own server.
  // The service's own Node server (its fast routes included), with the test's server options.
  const http = NodeServer.layer({ host: "127.0.0.1", port, server })
  const layer = Layer.merge(gateway(http), http).pipe(
    Layer.provide(NodeServicesLive),
    Layer.provide(NodeContext.layer),
    Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(config))),
    Layer.provide(extra ?? Layer.empty),
    // Request logs are the server's business; a test shows only warnings and errors.
    Layer.provide(Logger.minimumLogLevel(LogLevel.Warning))
  )
  const runtime = ManagedRuntime.make(layer)
  const address = await runtime.runPromise(Effect.map(HttpServer.HttpServer, (s) => s.address))
  if (address._tag !== "TcpAddress") throw new Error("expected a TCP address")
  return {
    url: `http://127.0.0.1:${address.port}`,
    dataDir,
    databaseUrl: db.url,
    runtime,
    stop: () => runtime.dispose(),
    close: async () => {
      await runtime.dispose()
      await db.drop()
      rmSync(dataDir, { recursive: true, force: true })
    }
  }
}
