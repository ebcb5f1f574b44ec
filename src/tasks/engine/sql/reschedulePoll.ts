import type { SqlClient } from "@effect/sql"
import { type Claim, ownedBy } from "../Claim.ts"

/**
 * A waiting task's next poll at `runAt` (ms), counting the polls for the
 * backoff, and the poller's hold released. A callback that arrived while it
 * was polled (`nudged`) brings the next poll forward to `earliest` (now, or
 * the upstream's retry hint).
 */
export const reschedulePoll = (
  sql: SqlClient.SqlClient,
  claim: Pick<Claim, "id" | "attempt">,
  runAt: number,
  earliest: number
) =>
  sql`
    UPDATE tasks SET run_at = CASE WHEN nudged THEN LEAST(${runAt}::bigint, ${earliest}::bigint) ELSE ${runAt} END,
      polls = polls + 1, run_state = 'waiting', nudged = false
    WHERE ${ownedBy(sql, claim)} AND run_state IN ('waiting', 'polling')`
