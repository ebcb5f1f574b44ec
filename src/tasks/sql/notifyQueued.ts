import type { SqlClient } from "@effect/sql"
import type { PooledQuery } from "../../platform/PooledQuery.ts"

/** The NOTIFY channel a create (or a task freeing a slot) signals on; the payload is the task's channel. */
export const QUEUED_CHANNEL = "tasks_queued"

/** Wakes idle workers of `channel`; inside a transaction it is delivered at commit. */
export const notifyQueued = (sql: SqlClient.SqlClient, channel: string) =>
  sql`SELECT pg_notify(${QUEUED_CHANNEL}, ${channel})`

/** The same wake-up on the pool (PooledQuery), outside any transaction: a create's, after its commit. */
export const notifyQueuedPooled = (pooled: PooledQuery["Type"], channel: string) =>
  pooled.rows("SELECT pg_notify($1, $2)", [QUEUED_CHANNEL, channel])
