import type { SqlClient } from "@effect/sql"
import { taskColumns, type TaskRow } from "../TaskRow.ts"

/** A watched task's row: the answer's columns, whose task it is, and its change sequence (the stream's event id). */
export type WatchedRow = TaskRow & { readonly account_id: string; readonly change_seq: number }

const COLUMNS = `account_id, change_seq, ${taskColumns()}`

/**
 * The rows of `ids`, whatever account holds them: a task's watcher is shared
 * by everyone following that task id, and each follower checks the row's
 * account against its own (tasks/TaskWait.ts). Missing ids have no row.
 */
export const findWatched = (sql: SqlClient.SqlClient, ids: ReadonlyArray<string>) =>
  sql<WatchedRow>`SELECT ${sql.literal(COLUMNS)} FROM tasks WHERE ${sql.in("id", ids)}`
