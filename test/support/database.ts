import { cpSync, existsSync } from "node:fs"
import { join, resolve } from "node:path"
import pg from "pg"

/**
 * The suite runs on the embedded PGlite by default and on a real PostgreSQL
 * when `DATABASE_URL` is set. On PostgreSQL every test file gets a database of
 * its own, created here and dropped afterwards, so files run in parallel.
 */
export const serverUrl = process.env.DATABASE_URL

export type Backend = "pglite" | "postgresql"

/** The database of this run: PostgreSQL when `DATABASE_URL` is set. */
export const backend: Backend = serverUrl ? "postgresql" : "pglite"

/**
 * Every database this run can reach, for suites that run the same cases on
 * each in one run (`describe.each(backends)`): PGlite always, PostgreSQL
 * too when `DATABASE_URL` is set.
 */
export const backends: ReadonlyArray<Backend> = serverUrl ? ["pglite", "postgresql"] : ["pglite"]

const withDatabase = (url: string, database: string) => {
  const u = new URL(url)
  u.pathname = `/${database}`
  return u.toString()
}

const admin = async <A>(f: (client: pg.Client) => Promise<A>): Promise<A> => {
  const client = new pg.Client({ connectionString: serverUrl })
  await client.connect()
  try {
    return await f(client)
  } finally {
    await client.end()
  }
}

/** A fresh, empty database URL on PostgreSQL, or undefined for the embedded PGlite. */
export const createDatabase = async (
  on: Backend = backend
): Promise<{ url: string | undefined; drop: () => Promise<void> }> => {
  if (on === "pglite" || !serverUrl) return { url: undefined, drop: async () => {} }
  const name = `gw_test_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`
  await admin((c) => c.query(`CREATE DATABASE ${name}`))
  return {
    url: withDatabase(serverUrl, name),
    drop: () => admin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(() => undefined)
  }
}

/** Drops a database `createDatabase` made (by its URL); nothing for the embedded PGlite. */
export const dropDatabase = async (url: string | undefined) => {
  if (url === undefined || !serverUrl) return
  const name = new URL(url).pathname.slice(1)
  await admin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`))
}

/**
 * The PGlite data directories the build makes (scripts/build.mjs,
 * dist/pglite; vitest's global setup builds them): `template`, migrated,
 * which the compiled service copies into a fresh `DATA_DIR` itself, and
 * `initdb`, empty. A gateway the tests boot in-process runs the sources,
 * where the service finds no template and PGlite's WASM initdb takes seconds
 * of CPU (12 s on a busy machine, against about 1 s from the copy).
 */
const PGLITE_DIRS = { template: resolve("dist/pglite/template"), initdb: resolve("dist/pglite/initdb") }

/**
 * Seeds a fresh data directory's PGlite database (`DATA_DIR/pglite`, where
 * the service opens it) from a built directory: the migrated template, as
 * the compiled service does at its first start (the sources' migrations then
 * find nothing to do, unless one was added since the build), or initdb's.
 */
export const seedPglite = (dataDir: string, from: keyof typeof PGLITE_DIRS = "template"): boolean => {
  if (!existsSync(join(PGLITE_DIRS[from], "PG_VERSION"))) return false
  cpSync(PGLITE_DIRS[from], join(dataDir, "pglite"), { recursive: true })
  return true
}
