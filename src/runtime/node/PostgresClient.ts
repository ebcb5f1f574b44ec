import * as Reactivity from "@effect/experimental/Reactivity"
import { SqlClient, SqlError } from "@effect/sql"
import * as PgClient from "@effect/sql-pg/PgClient"
import { Context, Duration, Effect, Layer, Redacted } from "effect"
import Pg from "pg"
import { PostgresClient } from "../../platform/Database.ts"
import { PooledQuery } from "../../platform/PooledQuery.ts"

/**
 * `bigint` columns come back as numbers on both backends (PGlite already does
 * this; `pg` returns strings by default). Every id and amount stored here fits
 * in a double.
 */
const INT8_OID = 20
const pgTypes = {
  getTypeParser: (oid: number, format?: any) =>
    oid === INT8_OID ? (value: string) => Number(value) : (Pg.types.getTypeParser as any)(oid, format)
}

/**
 * `url` with PostgreSQL's JIT off for the service's sessions, beside
 * whatever `options` the URL already sets (in the URL itself: pg prefers
 * the URL's `options` to its config's). Every statement here is a short one
 * over a few rows, but a planner's estimate can pass `jit_above_cost` all
 * the same: the claim of queued tasks, estimated over the 100 lanes it may
 * serve, spent 22 ms compiling a statement that ran in 0.4 ms
 * (bench/waiting-scale.ts). A connection string that is not a URL (key=value
 * pairs) is left as it is.
 */
export const sessionUrl = (url: string) => {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return url
  }
  const own = parsed.searchParams.get("options")
  parsed.searchParams.set("options", [own, "-c jit=off"].filter((o) => o !== null && o !== "").join(" "))
  return parsed.toString()
}

/** How long the first connection may take, as `PgClient.make` allows it. */
const CONNECT_TIMEOUT = Duration.seconds(5)

/**
 * The pool, made here rather than inside `PgClient.make` so that PooledQuery
 * runs on it too; set up as `PgClient.make` sets up its own: errors of idle
 * clients ignored (a client that fails is dropped by the pool), one query
 * at start so a wrong URL fails the start, and the pool ended on release.
 */
const pool = (url: Redacted.Redacted) =>
  Effect.acquireRelease(
    Effect.gen(function*() {
      const pool = new Pg.Pool({
        connectionString: sessionUrl(Redacted.value(url)),
        max: 10,
        application_name: "media-task-gateway",
        types: pgTypes
      })
      pool.on("error", () => {})
      yield* Effect.tryPromise({
        try: () => pool.query("SELECT 1"),
        catch: (cause) => new SqlError.SqlError({ cause, message: "PgClient: Failed to connect" })
      }).pipe(
        Effect.timeoutFail({
          duration: CONNECT_TIMEOUT,
          onTimeout: () =>
            new SqlError.SqlError({
              cause: new Error("Connection timed out"),
              message: "PgClient: Connection timed out"
            })
        }),
        Effect.tapError(() => Effect.promise(() => pool.end()))
      )
      return pool
    }),
    (pool) => Effect.promise(() => pool.end()).pipe(Effect.interruptible, Effect.timeoutOption(1000))
  )

/**
 * One statement on the pool, as `@effect/sql-pg` runs one outside a
 * transaction, but prepared: each text gets a name, so every connection
 * parses and plans it once, and later runs send only its parameters. These
 * are the hottest statements (a poll of a task's status): prepared, the read
 * benchmark answered about 20 % more requests per second on this machine,
 * the database's CPU being shared with the service. The texts name their
 * columns, so a migration that adds a column does not invalidate them.
 */
const pooledQuery = (pool: Pg.Pool) => {
  const names = new Map<string, string>()
  const nameOf = (text: string) => {
    let name = names.get(text)
    if (name === undefined) names.set(text, name = `pooled_${names.size + 1}`)
    return name
  }
  const failed = (cause: Error) => new SqlError.SqlError({ cause, message: "Failed to execute statement" })
  return PooledQuery.of({
    rows: <A extends object>(text: string, params: ReadonlyArray<unknown>) =>
      Effect.async<ReadonlyArray<A>, SqlError.SqlError>((resume) => {
        const query = { name: nameOf(text), text, values: params as Array<unknown> }
        pool.query(query, (cause: Error | undefined, result: Pg.QueryResult) => {
          resume(cause ? Effect.fail(failed(cause)) : Effect.succeed(result.rows as ReadonlyArray<A>))
        })
      }),
    rowsNow: <A extends object>(text: string, params: ReadonlyArray<unknown>) =>
      new Promise<ReadonlyArray<A>>((ok, fail) => {
        const query = { name: nameOf(text), text, values: params as Array<unknown> }
        pool.query(query, (cause: Error | undefined, result: Pg.QueryResult) => {
          if (cause) fail(failed(cause))
          else ok(result.rows as ReadonlyArray<A>)
        })
      })
  })
}

/** The PostgreSQL port on the `pg` driver (Node, and Deno through its Node compatibility). */
export const PostgresClientLive = Layer.succeed(PostgresClient, {
  layer: (url) =>
    Layer.scopedContext(
      Effect.gen(function*() {
        const shared = yield* pool(url)
        const client = yield* PgClient.fromPool({ acquire: Effect.succeed(shared), types: pgTypes })
        return Context.make(PgClient.PgClient, client).pipe(
          Context.add(SqlClient.SqlClient, client),
          Context.add(PooledQuery, pooledQuery(shared))
        )
      })
    ).pipe(Layer.provide(Reactivity.layer))
})
