import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import pg from "pg"
import { createDatabase } from "./database.ts"
import { ADMIN_TOKEN, freePort } from "./gateway.ts"
import type { Target } from "./http.ts"
import { kill, type Service, start, waitForHealth, waitForLog } from "./process.ts"

/**
 * One installation of the service as real processes: its own data directory
 * (the local object store, or PGlite), on PostgreSQL its own fresh database,
 * one port and public URL, and the secrets every replica shares. Processes
 * are started as the service itself (`start(…, "node")`), so SIGKILL and
 * SIGSTOP reach it; a restart on the same installation finds its data.
 */

export type Role = "api" | "worker" | "all"

export type Rows = (text: string, params?: ReadonlyArray<unknown>) => Promise<Array<any>>

export interface LaunchOptions {
  /** Told to `onLaunch`, for a test file that keeps some processes across tests. */
  readonly shared?: boolean
  /** More environment for this process (e.g. the secrets a channel names). */
  readonly env?: Record<string, string>
}

export const installation = async (
  /** Called with every process started, e.g. to show its output when a test fails. */
  onLaunch: (service: Service, role: Role, shared: boolean) => void = () => {}
) => {
  const dataDir = mkdtempSync(join(tmpdir(), "gw-installation-"))
  const db = await createDatabase()
  const port = await freePort()
  const url = `http://127.0.0.1:${port}`
  const mine: Array<Service> = []
  // Every replica shares the secrets, the store and the public URL (the API's: workers serve nothing).
  const env = (role: Role, configDir: string): Record<string, string> => ({
    ROLE: role,
    DATA_DIR: dataDir,
    CONFIG_DIR: configDir,
    ADMIN_TOKEN,
    ENCRYPTION_KEY: "process-test-encryption-key",
    STORAGE_SIGNING_KEY: "process-test-storage-signing-key",
    PUBLIC_BASE_URL: url,
    ...(db.url ? { DATABASE_URL: db.url } : {})
  })
  const launch = (role: Role, configDir: string, options: LaunchOptions = {}, listen = port) => {
    const service = start({ ...env(role, configDir), ...options.env }, listen, "node")
    onLaunch(service, role, options.shared ?? false)
    mine.push(service)
    return service
  }
  /** A serving process (ROLE=api or all), once /healthz answers. */
  const serve = async (role: "api" | "all", configDir: string, options: LaunchOptions = {}) => {
    const service = launch(role, configDir, options)
    if (!(await waitForHealth(service, 60_000))) throw new Error(`never healthy:\n${service.output().slice(-4000)}`)
    return service
  }
  /**
   * A ROLE=worker process, once its channel worker runs: its worker id, and where it answers `/healthz`,
   * `/readyz` and `/metrics` (an `OPS_PORT` of its own: the installation's port is the API's).
   */
  const worker = async (configDir: string, options: LaunchOptions = {}) => {
    const opsPort = await freePort()
    const service = launch(
      "worker",
      configDir,
      { ...options, env: { OPS_PORT: String(opsPort), ...options.env } },
      opsPort
    )
    const started = await waitForLog(service, (l) => l.message === "worker started", 60_000)
    const ops: Target = { url: `http://127.0.0.1:${opsPort}` }
    return { service, workerId: started.annotations.worker_id as string, ops }
  }
  /** Kills what is still running of this installation, then drops its database and files. */
  const close = async () => {
    await Promise.all(mine.map(kill))
    await db.drop()
    rmSync(dataDir, { recursive: true, force: true })
  }
  return { dataDir, db, url, target: { url } as Target, launch, serve, worker, close }
}

export type Installation = Awaited<ReturnType<typeof installation>>

/**
 * The database, from outside every process: a client of its own on
 * PostgreSQL, the files themselves on PGlite (single-process: opened only
 * after the service has stopped).
 */
export const withDatabase = async <A>(
  where: { dbUrl: string | undefined; dataDir: string },
  f: (rows: Rows) => Promise<A>
) => {
  if (where.dbUrl !== undefined) {
    const client = new pg.Client({ connectionString: where.dbUrl })
    await client.connect()
    try {
      return await f((text, params) => client.query(text, params as Array<unknown>).then((r) => r.rows))
    } finally {
      await client.end()
    }
  }
  const { PGlite } = await import("@electric-sql/pglite")
  const db = new PGlite(join(where.dataDir, "pglite"))
  await db.waitReady
  try {
    return await f((text, params) => db.query<any>(text, params as Array<unknown>).then((r) => r.rows))
  } finally {
    await db.close()
  }
}
