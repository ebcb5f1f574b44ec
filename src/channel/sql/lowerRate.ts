import type { SqlClient } from "@effect/sql"
import { DECREASE, FLOOR, RECOVERY_PER_S } from "../Pacing.ts"

/**
 * A throttling answer (a 429, a Retry-After) to a request whose slot was
 * reserved at `reservedAt`: the channel's rate factor is multiplied down
 * (Pacing.ts `loweredFactor`: by DECREASE, never below FLOOR, and only by an
 * answer to a request paced since the last lowering), and every schedule of
 * the channel waits at least `retryAfterMs` from now. One statement, on the
 * database's clock, for every replica at once.
 */
export const lowerRate = (sql: SqlClient.SqlClient, channel: string, reservedAt: number, retryAfterMs: number) =>
  sql<{ factor: number; lowered: boolean }>`
    WITH clock AS (SELECT (extract(epoch FROM clock_timestamp()) * 1000)::float8 AS now),
    current AS (
      SELECT least(1, factor + ${RECOVERY_PER_S}::float8 * greatest(0, clock.now - lowered_at) / 1000) AS factor,
        ${reservedAt}::float8 >= lowered_at AS lowers
      FROM upstream_budgets, clock WHERE channel = ${channel} AND schedule = 'all'
      FOR UPDATE OF upstream_budgets
    )
    UPDATE upstream_budgets SET
      next_at = greatest(next_at, clock.now + ${retryAfterMs}::float8),
      factor = CASE WHEN schedule = 'all' AND current.lowers
        THEN greatest(${FLOOR}::float8, current.factor * ${DECREASE}::float8) ELSE upstream_budgets.factor END,
      lowered_at = CASE WHEN schedule = 'all' AND current.lowers THEN clock.now ELSE upstream_budgets.lowered_at END
    FROM current, clock
    WHERE channel = ${channel}
    RETURNING CASE WHEN current.lowers THEN greatest(${FLOOR}::float8, current.factor * ${DECREASE}::float8)
      ELSE current.factor END AS factor, current.lowers AS lowered`
