import type { SqlError } from "@effect/sql"
import { Context, type Effect } from "effect"

/**
 * One statement on the database's pool, outside `@effect/sql`'s statement
 * machinery (a span, a scope and a compiled template per statement: 14 % of
 * the CPU of an authenticated read, bench/RESULTS.md), for the hot paths'
 * statements: the polling path's single read, a create's statement and its
 * wake-up. It takes part in no transaction, so it must not be called
 * inside one (on PGlite it would wait for that transaction's end, which waits
 * for it). The text uses `$1` parameters; rows come as the driver returns
 * them, `bigint` columns as numbers on both backends, as through the
 * SqlClient. Both backends provide it beside their SqlClient, on the same
 * pool; on PostgreSQL each text is a prepared statement
 * (src/runtime/node/PostgresClient.ts).
 */
export class PooledQuery extends Context.Tag("PooledQuery")<PooledQuery, {
  readonly rows: <A extends object>(
    text: string,
    params: ReadonlyArray<unknown>
  ) => Effect.Effect<ReadonlyArray<A>, SqlError.SqlError>
  /**
   * The same statement as a promise (rejected with the SqlError), where the
   * driver's pool takes one call without an effect (PostgreSQL's): the fast
   * routes' quick path runs it with no fiber (platform/http/QuickFrame.ts).
   */
  readonly rowsNow?: <A extends object>(text: string, params: ReadonlyArray<unknown>) => Promise<ReadonlyArray<A>>
}>() {}
