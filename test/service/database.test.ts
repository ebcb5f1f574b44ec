import { SqlClient } from "@effect/sql"
import * as PgClient from "@effect/sql-pg/PgClient"
import { Effect, Redacted } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { migrations } from "../../src/migrations/index.ts"
import { isReady, migrate } from "../../src/platform/Database.ts"
import { backend, createDatabase } from "../support/database.ts"
import { pgliteLayer } from "../support/pglite.ts"

let db: Awaited<ReturnType<typeof createDatabase>>
beforeAll(async () => {
  db = await createDatabase()
})
afterAll(() => db?.drop())

/**
 * Runs with a client of its own on PostgreSQL (a pool per "replica"); on
 * PGlite, one process has one database, so all share the outer client.
 */
const withClient = <A, E>(effect: Effect.Effect<A, E, SqlClient.SqlClient>) =>
  db.url ? Effect.provide(effect, PgClient.layer({ url: Redacted.make(db.url) })) : effect

describe(`migrations (${backend})`, () => {
  it("replicas starting at once apply each migration exactly once", async () => {
    const run = Effect.gen(function*() {
      const before = yield* withClient(isReady)
      // Four "replicas", each with its own connection pool on PostgreSQL.
      const applied = yield* Effect.all(Array.from({ length: 4 }, () => withClient(migrate)), {
        concurrency: "unbounded"
      })
      const rows = yield* withClient(
        Effect.flatMap(SqlClient.SqlClient, (sql) => sql<{ id: number }>`SELECT id FROM schema_migrations ORDER BY id`)
      )
      const after = yield* withClient(isReady)
      const again = yield* withClient(migrate)
      return { before, applied, rows, after, again }
    })
    const result = await Effect.runPromise(
      Effect.provide(run, db.url ? PgClient.layer({ url: Redacted.make(db.url) }) : pgliteLayer())
    )
    expect(result.before).toBe(false)
    expect(result.applied.reduce((a, b) => a + b, 0)).toBe(migrations.length)
    expect(result.rows.map((r) => r.id)).toEqual(migrations.map(([id]) => id))
    expect(result.after).toBe(true)
    expect(result.again).toBe(0)
  })

  it("transactions on the embedded database do not interleave with other statements", async () => {
    const program = Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* sql`CREATE TABLE counter (n integer NOT NULL)`
      yield* sql`INSERT INTO counter VALUES (0)`
      // Each transaction reads, waits, then writes; without isolation of the
      // single connection, increments would be lost.
      const bump = sql.withTransaction(Effect.gen(function*() {
        const [row] = yield* sql<{ n: number }>`SELECT n FROM counter`
        yield* Effect.sleep("5 millis")
        yield* sql`UPDATE counter SET n = ${row!.n + 1}`
      }))
      yield* Effect.all(Array.from({ length: 10 }, () => bump), { concurrency: "unbounded" })
      const failed = yield* sql.withTransaction(
        Effect.zipRight(sql`UPDATE counter SET n = -1`, Effect.fail("rollback"))
      )
        .pipe(Effect.flip)
      const [row] = yield* sql<{ n: number }>`SELECT n FROM counter`
      return { n: row!.n, failed }
    })
    const result = await Effect.runPromise(program.pipe(Effect.provide(pgliteLayer())))
    expect(result).toEqual({ n: 10, failed: "rollback" })
  })
})

/** Columns and indexes of the public schema, in a stable order: what two databases are compared by. */
const schemaOf = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const columns = yield* sql`
    SELECT table_name, column_name, data_type, is_nullable, column_default
    FROM information_schema.columns WHERE table_schema = 'public' ORDER BY table_name, column_name`
  const indexes = yield* sql`SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'public' ORDER BY indexname`
  const migrated = yield* sql<{ id: number }>`SELECT id FROM schema_migrations ORDER BY id`
  return { columns, indexes, migrated: migrated.map((r) => r.id) }
})

describe("the build's PGlite template (dist/pglite/template)", () => {
  it("holds every migration and the same schema as an empty database the migrations are run on", async () => {
    const fresh = await Effect.runPromise(
      Effect.zipRight(migrate, schemaOf).pipe(Effect.provide(pgliteLayer()))
    )
    const template = await Effect.runPromise(
      Effect.all([migrate, schemaOf]).pipe(Effect.provide(pgliteLayer("template")))
    )
    expect(template[0]).toBe(0)
    expect(template[1].migrated).toEqual(migrations.map(([id]) => id))
    expect(template[1].columns.length).toBeGreaterThan(50)
    expect(template[1]).toEqual(fresh)
  })
})
