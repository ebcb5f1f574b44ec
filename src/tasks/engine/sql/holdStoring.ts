import type { SqlClient } from "@effect/sql"

/**
 * The store retrier's hold on the `storing` tasks of its pass, renewed from
 * `held` to `until` (ms) while it tries them, like a lease: a process that
 * dies mid-pass leaves them due again within one hold. Only rows still held
 * at `held` move, so a try rescheduled meanwhile (`rescheduleStore`) or a
 * task that ended keeps what its try wrote.
 */
export const holdStoring = (sql: SqlClient.SqlClient, ids: ReadonlyArray<string>, held: number, until: number) =>
  sql`
    UPDATE tasks SET run_at = ${until}
    WHERE ${sql.in("id", ids)} AND run_state = 'storing' AND run_at = ${held} RETURNING id`
