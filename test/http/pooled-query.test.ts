import { SqlClient } from "@effect/sql"
import { Effect, Layer, Redacted } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { PostgresClient } from "../../src/platform/Database.ts"
import { PooledQuery } from "../../src/platform/PooledQuery.ts"
import { PostgresClientLive } from "../../src/runtime/node/PostgresClient.ts"
import { type Backend, backends, createDatabase } from "../support/database.ts"
import { pgliteLayer } from "../support/pglite.ts"

/**
 * PooledQuery (src/platform/PooledQuery.ts), the polling path's way past
 * the SqlClient's statement machinery, on each backend as the service
 * composes it: rows as the SqlClient gives them, failures as SqlError, and
 * on PostgreSQL one prepared statement per text, on sessions without JIT.
 */
describe.each(backends)("PooledQuery (%s)", (backend: Backend) => {
  let db: Awaited<ReturnType<typeof createDatabase>>
  beforeAll(async () => {
    db = await createDatabase(backend)
  })
  afterAll(() => db?.drop())

  const layer = () =>
    db.url === undefined
      ? pgliteLayer()
      : Layer.unwrapEffect(Effect.map(PostgresClient, (port) => port.layer(Redacted.make(db.url!)))).pipe(
        Layer.provide(PostgresClientLive)
      )

  const run = <A, E>(effect: Effect.Effect<A, E, PooledQuery | SqlClient.SqlClient>) =>
    Effect.runPromise(Effect.provide(effect, layer()))

  it("gives the rows the SqlClient gives, bigint columns as numbers, with $n parameters", async () => {
    const { direct, viaClient } = await run(Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const pooled = yield* PooledQuery
      yield* sql`CREATE TABLE pooled_probe (id text PRIMARY KEY, n bigint, doc jsonb, at bigint)`
      yield* sql`INSERT INTO pooled_probe VALUES ('a', 9007199254740991, '{"k": [1, "x"]}', NULL), ('b', 2, NULL, 5)`
      const text = "SELECT id, n, doc, at FROM pooled_probe WHERE id = $1 OR n = $2 ORDER BY id"
      return {
        direct: yield* pooled.rows(text, ["a", 2]),
        viaClient: yield* sql`SELECT id, n, doc, at FROM pooled_probe WHERE id = ${"a"} OR n = ${2} ORDER BY id`
      }
    }))
    expect(direct).toEqual([
      { id: "a", n: 9007199254740991, doc: { k: [1, "x"] }, at: null },
      { id: "b", n: 2, doc: null, at: 5 }
    ])
    expect(direct).toEqual(viaClient)
  })

  it("fails with a SqlError, and the pool goes on serving", async () => {
    const { failure, after } = await run(Effect.gen(function*() {
      const pooled = yield* PooledQuery
      const failure = yield* Effect.flip(pooled.rows("SELECT * FROM no_such_table WHERE id = $1", ["x"]))
      const after = yield* pooled.rows<{ one: number }>("SELECT 1 AS one", [])
      return { failure, after }
    }))
    expect(failure._tag).toBe("SqlError")
    expect(String((failure.cause as Error).message)).toContain("no_such_table")
    expect(after).toEqual([{ one: 1 }])
  })

  // PGlite is in the process: nothing to prepare over a wire.
  if (backend === "postgresql") {
    it("prepares each text once per connection and runs it by name after", async () => {
      const prepared = await run(Effect.gen(function*() {
        const pooled = yield* PooledQuery
        const text = "SELECT $1::text AS echo"
        // One after another, so the pool hands out the same idle connection each time.
        for (const word of ["one", "two", "three"]) {
          expect(yield* pooled.rows(text, [word])).toEqual([{ echo: word }])
        }
        return yield* pooled.rows<{ name: string; statement: string }>(
          "SELECT name, statement FROM pg_prepared_statements ORDER BY name",
          []
        )
      }))
      expect(prepared.filter((p) => p.statement === "SELECT $1::text AS echo")).toHaveLength(1)
      expect(prepared.map((p) => p.name)).toEqual(["pooled_1", "pooled_2"])
    })

    it("runs its sessions without JIT, keeping the options the URL sets", async () => {
      const url = new URL(db.url!)
      url.searchParams.set("options", "-c statement_timeout=12345")
      const settings = await Effect.runPromise(Effect.provide(
        Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          const pooled = yield* PooledQuery
          return {
            viaClient: yield* sql<{ jit: string }>`SHOW jit`,
            pooled: yield* pooled.rows<{ statement_timeout: string }>("SHOW statement_timeout", [])
          }
        }),
        Layer.unwrapEffect(Effect.map(PostgresClient, (port) => port.layer(Redacted.make(url.toString())))).pipe(
          Layer.provide(PostgresClientLive)
        )
      ))
      expect(settings).toEqual({ viaClient: [{ jit: "off" }], pooled: [{ statement_timeout: "12345ms" }] })
    })
  }
})
