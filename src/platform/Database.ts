import { FileSystem, Path } from "@effect/platform"
import { SqlClient, type SqlError } from "@effect/sql"
import { type ConfigError, Context, Effect, Layer, Option, type Redacted } from "effect"
import { migrations } from "../migrations/index.ts"
import { AppConfig } from "./AppConfig.ts"
import type { PooledQuery } from "./PooledQuery.ts"

/**
 * The PostgreSQL client for a `DATABASE_URL`, a port the runtime provides
 * (`src/runtime/node/PostgresClient.ts`: `@effect/sql-pg` over the `pg`
 * driver, which runs on Node and on Deno's Node compatibility), so the core
 * never imports a driver.
 */
export class PostgresClient extends Context.Tag("PostgresClient")<PostgresClient, {
  readonly layer: (
    url: Redacted.Redacted
  ) => Layer.Layer<SqlClient.SqlClient | PooledQuery, SqlError.SqlError | ConfigError.ConfigError>
}>() {}

/**
 * A data directory that PGlite's initdb made when the service was built
 * (`npm run build`, scripts/build.mjs: dist/pglite/template), for the PGlite
 * version installed. A fresh `DATA_DIR` gets a copy of it instead of running
 * initdb at start, which takes PGlite seconds of CPU (a WASM initdb) and
 * hundreds of MiB that stay allocated. From the sources (tsx, Deno) there is
 * none (this URL names a folder that does not exist) and PGlite runs initdb
 * itself, as it always did.
 */
const PGLITE_TEMPLATE = new URL("../../pglite/template/", import.meta.url)

/** Copies the built template into `dataDir` when it is empty; any problem leaves it empty, for initdb. */
const seedFromTemplate = (dataDir: string) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const path = yield* Path.Path
    const template = yield* path.fromFileUrl(PGLITE_TEMPLATE)
    if (!(yield* fs.exists(path.join(template, "PG_VERSION")))) return
    if ((yield* fs.readDirectory(dataDir)).length > 0) return
    // Copied beside it, then renamed into place: a start killed mid-copy leaves no half database.
    const staging = `${dataDir}.seeding-${crypto.randomUUID()}`
    yield* fs.remove(staging, { recursive: true, force: true })
    // File by file, 32 at a time: about 40 % faster than one recursive copy (one file after another).
    const entries = yield* fs.readDirectory(template, { recursive: true })
    const kinds = yield* Effect.forEach(
      entries,
      (entry) => Effect.map(fs.stat(path.join(template, entry)), (info) => ({ entry, type: info.type })),
      { concurrency: 32 }
    )
    yield* fs.makeDirectory(staging, { recursive: true })
    const folders = kinds.filter((k) => k.type === "Directory").sort((a, b) => a.entry.length - b.entry.length)
    for (const { entry } of folders) yield* fs.makeDirectory(path.join(staging, entry), { recursive: true })
    yield* Effect.forEach(
      kinds.filter((k) => k.type === "File"),
      ({ entry }) => fs.copyFile(path.join(template, entry), path.join(staging, entry)),
      { concurrency: 32, discard: true }
    )
    yield* fs.remove(dataDir, { recursive: true })
    yield* fs.rename(staging, dataDir)
  }).pipe(
    Effect.catchAll((error) =>
      Effect.logWarning("PGlite template not used; initdb runs").pipe(Effect.annotateLogs({ error: String(error) }))
    )
  )

/**
 * PostgreSQL when `DATABASE_URL` is set, otherwise PGlite under `DATA_DIR`.
 * PGlite's module is loaded only when it is the database.
 */
export const SqlLive = Layer.unwrapEffect(
  Effect.gen(function*() {
    const config = yield* AppConfig
    if (Option.isSome(config.databaseUrl)) return (yield* PostgresClient).layer(config.databaseUrl.value)
    const fs = yield* FileSystem.FileSystem
    const path = yield* Path.Path
    const dataDir = path.join(config.dataDir, "pglite")
    yield* fs.makeDirectory(dataDir, { recursive: true }).pipe(Effect.orDie)
    yield* seedFromTemplate(dataDir)
    const PgliteClient = yield* Effect.promise(() => import("./PgliteClient.ts"))
    return PgliteClient.layer({ dataDir })
  })
)

/** An arbitrary constant that names this service's migration lock. */
const MIGRATION_LOCK = 7_130_412_001

/**
 * Applies pending migrations. Effect's Migrator creates its bookkeeping table
 * before taking its lock, so two replicas starting together can collide on
 * that CREATE; here one transaction-scoped advisory lock covers the whole run,
 * and the second replica finds everything applied once it gets the lock.
 */
export const migrate = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const applied = yield* sql.withTransaction(Effect.gen(function*() {
    yield* sql`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK})`
    yield* sql`CREATE TABLE IF NOT EXISTS schema_migrations (
      id integer PRIMARY KEY,
      name text NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now()
    )`
    const done = new Set((yield* sql<{ id: number }>`SELECT id FROM schema_migrations`).map((r) => r.id))
    const pending = migrations.filter(([id]) => !done.has(id))
    for (const [id, name, statements] of pending) {
      for (const statement of statements) yield* sql.unsafe(statement)
      yield* sql`INSERT INTO schema_migrations (id, name) VALUES (${id}, ${name})`
      yield* Effect.logInfo("migration applied").pipe(Effect.annotateLogs({ migration: `${id}_${name}` }))
    }
    return pending.length
  }))
  return applied
}).pipe(Effect.withSpan("Database.migrate"))

/** Whether the database answers and every migration this code knows is applied. */
export const isReady = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM schema_migrations`
  return rows[0]!.n >= migrations.length
}).pipe(Effect.timeout("2 seconds"), Effect.orElseSucceed(() => false))

/**
 * SQLSTATEs with which PostgreSQL has rolled a transaction back for what
 * other transactions did at the same moment (deadlock_detected,
 * serialization_failure): running it again is the documented answer. A
 * create of one account racing the completion of that account's tasks was
 * seen to deadlock in the charge (bench/engine-throughput.ts), which had
 * answered 500.
 */
const CONFLICTS = new Set(["40P01", "40001"])

export const isConflict = (error: unknown) =>
  (error as { _tag?: string })?._tag === "SqlError" &&
  CONFLICTS.has(String(((error as SqlError.SqlError).cause as { code?: unknown } | undefined)?.code))

/** A whole transaction, run again (up to 3 more times) when PostgreSQL rolled it back for a conflict. */
export const retryingConflicts = <A, E, R>(transaction: Effect.Effect<A, E, R>) =>
  Effect.retry(transaction, { times: 3, while: isConflict })
