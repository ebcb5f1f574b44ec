import type { SqlClient } from "@effect/sql"

/** The tasks whose results wait in the spool `spoolId`. */
export const spooledTasks = (sql: SqlClient.SqlClient, spoolId: string) =>
  sql<{ id: string }>`SELECT id FROM tasks WHERE run_state = 'storing' AND spool_id = ${spoolId}`
