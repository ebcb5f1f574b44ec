import type { SqlClient } from "@effect/sql"
import type { TaskKind } from "../Task.ts"
import { taskColumns, type TaskRow } from "../TaskRow.ts"

/** A task's row with its change sequence (the event id of its live status stream). */
export type ObservedRow = TaskRow & { readonly change_seq: number }

const COLUMNS = `change_seq, ${taskColumns()}`

/** The caller's task with its change sequence; no row for another account's or an unknown task. */
export const findObserved = (sql: SqlClient.SqlClient, accountId: string, kind: TaskKind, id: string) =>
  sql<ObservedRow>`SELECT ${sql.literal(COLUMNS)} FROM tasks
    WHERE id = ${id} AND account_id = ${accountId} AND kind = ${kind}`
