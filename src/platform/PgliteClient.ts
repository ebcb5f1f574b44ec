import * as Reactivity from "@effect/experimental/Reactivity"
import * as PgClient from "@effect/sql-pg/PgClient"
import * as SqlClient from "@effect/sql/SqlClient"
import type { Connection } from "@effect/sql/SqlConnection"
import { SqlError } from "@effect/sql/SqlError"
import * as Statement from "@effect/sql/Statement"
import { PGlite } from "@electric-sql/pglite"
import { Context, Effect, Layer, Stream } from "effect"
import { PooledQuery } from "./PooledQuery.ts"

/**
 * An embedded PostgreSQL (PGlite, WASM) behind the same `PgClient` interface as
 * `@effect/sql-pg`, so services, migrations and the queue run unchanged on both.
 *
 * PGlite is one connection. A semaphore gives a transaction the connection
 * for its whole scope; statements outside a transaction take it per statement,
 * so they never interleave with another fiber's open transaction.
 */
export interface PgliteClientConfig {
  /** Directory of the database files; in memory when omitted. */
  readonly dataDir?: string | undefined
}

/**
 * PostgreSQL's `shared_buffers` inside PGlite: 16 MB instead of initdb's
 * 128 MB. PGlite is one process whose WASM memory holds these buffers in
 * full from the start (128 MB of them made up most of an idle service's
 * resident memory, and clearing them most of its open time); its files are
 * in the operating system's cache behind them anyway.
 */
const SHARED_BUFFERS = "16MB"

const wrap = <A>(message: string, f: () => Promise<A>) =>
  Effect.tryPromise({ try: f, catch: (cause) => new SqlError({ cause, message }) })

export const make = (config: PgliteClientConfig) =>
  Effect.gen(function*() {
    const db = yield* Effect.acquireRelease(
      wrap("PGlite: failed to open the database", async () => {
        const db = new PGlite(config.dataDir, {
          startParams: [...PGlite.defaultStartParams, "-c", `shared_buffers=${SHARED_BUFFERS}`]
        })
        await db.waitReady
        return db
      }),
      (db) => Effect.promise(() => db.close()).pipe(Effect.ignore)
    )
    const lock = yield* Effect.makeSemaphore(1)

    const run = (sql: string, params: ReadonlyArray<unknown>, rowMode: "object" | "array" = "object") =>
      wrap("Failed to execute statement", () => db.query<any>(sql, params as Array<unknown>, { rowMode }))

    const makeConnection = (locked: boolean): Connection => {
      const guard = <A, E>(effect: Effect.Effect<A, E>) => (locked ? lock.withPermits(1)(effect) : effect)
      const rows = (sql: string, params: ReadonlyArray<unknown>) =>
        guard(Effect.map(run(sql, params), (r) => r.rows as ReadonlyArray<any>))
      return {
        execute: (sql, params, transformRows) =>
          transformRows ? Effect.map(rows(sql, params), transformRows) : rows(sql, params),
        executeRaw: (sql, params) => guard(run(sql, params)),
        executeValues: (sql, params) =>
          guard(Effect.map(run(sql, params, "array"), (r) => r.rows as ReadonlyArray<ReadonlyArray<unknown>>)),
        executeUnprepared: (sql, params, transformRows) =>
          transformRows ? Effect.map(rows(sql, params), transformRows) : rows(sql, params),
        executeStream: (sql, params, transformRows) =>
          Stream.fromIterableEffect(
            transformRows ? Effect.map(rows(sql, params), transformRows) : rows(sql, params)
          )
      }
    }

    const shared = makeConnection(true)
    const exclusive = makeConnection(false)

    const client = yield* SqlClient.make({
      acquirer: Effect.succeed(shared),
      transactionAcquirer: Effect.as(
        Effect.acquireRelease(lock.take(1), () => lock.release(1)),
        exclusive
      ),
      compiler: PgClient.makeCompiler(),
      spanAttributes: [["db.system.name", "postgresql"], ["db.namespace", "pglite"]]
    })

    const pgClient: PgClient.PgClient = Object.assign(client, {
      [PgClient.TypeId]: PgClient.TypeId,
      config: {},
      // The same custom fragment `@effect/sql-pg` compiles for its own `json` helper.
      json: (value: unknown) => Statement.custom<any>("PgJson")(value, undefined, undefined) as any,
      listen: (channel: string) =>
        Stream.asyncPush<string, SqlError>((emit) =>
          Effect.acquireRelease(
            wrap("Failed to listen", () => db.listen(channel, (payload) => emit.single(payload))),
            (unlisten) => Effect.promise(() => unlisten()).pipe(Effect.ignore)
          )
        ),
      notify: (channel: string, payload: string) =>
        Effect.asVoid(shared.execute("SELECT pg_notify($1, $2)", [channel, payload], undefined))
    })
    // The statement outside any transaction, as the SqlClient runs it: on the shared connection, between transactions.
    const pooled = PooledQuery.of({ rows: (text, params) => shared.execute(text, params, undefined) })
    return { client: pgClient, pooled }
  })

export const layer = (
  config: PgliteClientConfig
): Layer.Layer<PgClient.PgClient | SqlClient.SqlClient | PooledQuery, SqlError> =>
  Layer.scopedContext(
    Effect.map(
      make(config),
      ({ client, pooled }) =>
        Context.make(PgClient.PgClient, client).pipe(
          Context.add(SqlClient.SqlClient, client),
          Context.add(PooledQuery, pooled)
        )
    )
  ).pipe(Layer.provide(Reactivity.layer))
