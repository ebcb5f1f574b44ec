import type { SqlClient } from "@effect/sql"

/** Wakes idle workers of `channel`; inside a transaction it is delivered at commit. */
export const notifyQueued = (sql: SqlClient.SqlClient, notifyChannel: string, channel: string) =>
  sql`SELECT pg_notify(${notifyChannel}, ${channel})`
