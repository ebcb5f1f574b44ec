import * as PgClient from "@effect/sql-pg/PgClient"
import { Layer } from "effect"
import Pg from "pg"
import { PostgresClient } from "../../platform/Database.ts"

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

/** The PostgreSQL port on the `pg` driver (Node, and Deno through its Node compatibility). */
export const PostgresClientLive = Layer.succeed(PostgresClient, {
  layer: (url) => PgClient.layer({ url, types: pgTypes, maxConnections: 10, applicationName: "media-task-gateway" })
})
