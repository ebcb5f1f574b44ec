import { SqlClient, SqlError } from "@effect/sql"
import * as PgClient from "@effect/sql-pg/PgClient"
import { Deferred, Effect, Redacted } from "effect"
import { describe, expect, it } from "vitest"
import { retryingConflicts } from "../../src/platform/Database.ts"
import { unexpectedError } from "../../src/platform/http/Errors.ts"
import { backends, createDatabase } from "../support/database.ts"

/**
 * A transaction PostgreSQL rolls back for a deadlock or a serialization
 * failure is run again (platform/Database.ts, retryingConflicts), so a
 * create racing the completion of its account's tasks is not a 500.
 */

const failingWith = (code: string, failures: number) => {
  let runs = 0
  const transaction = Effect.suspend(() =>
    ++runs <= failures
      ? Effect.fail(new SqlError.SqlError({ message: `failed with ${code}`, cause: { code } }))
      : Effect.succeed("committed")
  )
  return { transaction, runs: () => runs }
}

describe("transactions rolled back for a conflict", () => {
  it("are run again after a deadlock or a serialization failure", async () => {
    for (const code of ["40P01", "40001"]) {
      const { runs, transaction } = failingWith(code, 2)
      expect(await Effect.runPromise(retryingConflicts(transaction)), code).toBe("committed")
      expect(runs(), code).toBe(3)
    }
  })

  it("are not run again for any other failure, and give up after three more runs", async () => {
    const unique = failingWith("23505", 1)
    const exit = await Effect.runPromiseExit(retryingConflicts(unique.transaction))
    expect(exit._tag).toBe("Failure")
    expect(unique.runs()).toBe(1)
    const endless = failingWith("40P01", 100)
    expect((await Effect.runPromiseExit(retryingConflicts(endless.transaction)))._tag).toBe("Failure")
    expect(endless.runs()).toBe(4)
  })
})

describe("a conflict that outlasted its retries", () => {
  it("answers 503 service_busy with Retry-After, not 500; any other defect stays a 500", () => {
    const busy = unexpectedError(new SqlError.SqlError({ message: "deadlock", cause: { code: "40P01" } }))
    expect([busy.status, busy.code, busy.type, busy.retryAfter]).toEqual([503, "service_busy", "api_error", 1])
    const other = unexpectedError(new SqlError.SqlError({ message: "unique", cause: { code: "23505" } }))
    expect([other.status, other.code]).toEqual([500, "internal_error"])
    expect(unexpectedError(new Error("boom")).status).toBe(500)
  })
})

// A real deadlock needs two connections: PostgreSQL only (PGlite has one).
for (const on of backends.filter((b) => b === "postgresql")) {
  describe(`a real deadlock (${on})`, () => {
    it("two transactions locking two rows in opposite orders both commit, the victim run again", async () => {
      const db = await createDatabase(on)
      try {
        const program = Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          yield* sql`CREATE TABLE pair (id int PRIMARY KEY, n int NOT NULL)`
          yield* sql`INSERT INTO pair VALUES (1, 0), (2, 0)`
          let runs = 0
          const bothHoldOne = yield* Deferred.make<void>()
          let holding = 0
          const lockInOrder = (first: number, second: number) =>
            Effect.gen(function*() {
              runs++
              yield* sql`UPDATE pair SET n = n + 1 WHERE id = ${first}`
              // Both hold their first row before either asks for its second: a deadlock on the first run.
              if (++holding === 2) yield* Deferred.succeed(bothHoldOne, undefined)
              yield* Deferred.await(bothHoldOne)
              yield* sql`UPDATE pair SET n = n + 1 WHERE id = ${second}`
            }).pipe(sql.withTransaction, retryingConflicts)
          yield* Effect.all([lockInOrder(1, 2), lockInOrder(2, 1)], { concurrency: 2 })
          const rows = yield* sql<{ n: number }>`SELECT n FROM pair ORDER BY id`
          return { runs, counts: rows.map((r) => r.n) }
        }).pipe(
          Effect.provide(PgClient.layer({ url: Redacted.make(db.url!), maxConnections: 2 })),
          Effect.scoped
        )
        const { counts, runs } = await Effect.runPromise(program)
        // Each transaction committed once: both rows counted twice; the deadlock's victim ran a second time.
        expect(counts).toEqual([2, 2])
        expect(runs).toBe(3)
      } finally {
        await db.drop()
      }
    }, 60_000)
  })
}
