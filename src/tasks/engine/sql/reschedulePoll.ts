import type { SqlClient } from "@effect/sql"
import { type Claim, ownedBy } from "../Claim.ts"

/**
 * A waiting task's next poll at `runAt` (ms), counting the polls for the
 * backoff, and the poller's hold released. A callback that arrived while it
 * was polled (`nudged`) brings the next poll forward to `earliest` (now, or
 * the upstream's retry hint). `polledAt`: when the poll was sent, kept for
 * the gap to the next one; null when no poll was sent (a shutdown hands the
 * task on).
 */
export const reschedulePoll = (
  sql: SqlClient.SqlClient,
  claim: Pick<Claim, "id" | "attempt">,
  runAt: number,
  earliest: number,
  polledAt: number | null
) =>
  sql`
    UPDATE tasks SET run_at = CASE WHEN nudged THEN LEAST(${runAt}::bigint, ${earliest}::bigint) ELSE ${runAt} END,
      polls = polls + 1, run_state = 'waiting', nudged = false, polled_at = COALESCE(${polledAt}::bigint, polled_at)
    WHERE ${ownedBy(sql, claim)} AND run_state IN ('waiting', 'polling')`
