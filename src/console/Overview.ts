import { SqlClient } from "@effect/sql"
import { Clock, Effect } from "effect"
import { toCredits } from "../billing/Money.ts"
import { Registry } from "../catalog/Registry.ts"
import type { Overview } from "./Api.ts"

const HOUR_S = 3600
const DAY_S = 86_400

/**
 * The operator's overview charts, read from the database so every replica
 * draws the same: tasks created per hour by status (last 24 hours), time to
 * result per channel and failures by error code (tasks finished in the last
 * 24 hours), and credits charged and refunded per UTC day (last 14 days).
 * Buckets are whole hours and days in Unix seconds; empty ones are filled
 * here, so a chart's axis never skips.
 */
export const overviewWith = (
  /** The deprecated models still offered, whose recent callers the overview counts. */
  deprecated: ReadonlyArray<
    { readonly model: string; readonly sunset: number; readonly successor?: string | undefined }
  >
) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const nowS = Math.floor((yield* Clock.currentTimeMillis) / 1000)
    const firstHour = Math.floor(nowS / HOUR_S) * HOUR_S - 23 * HOUR_S
    const firstDay = Math.floor(nowS / DAY_S) * DAY_S - 13 * DAY_S
    const daySince = nowS - DAY_S

    const perHour = yield* sql<{ hour: number; status: string; count: number }>`
    SELECT (created_at / ${HOUR_S}) * ${HOUR_S} AS hour, status, count(*)::int AS count
    FROM tasks WHERE created_at >= ${firstHour} GROUP BY 1, 2`
    const times = yield* sql<{ channel: string; tasks: number; p50: number | null; p95: number | null }>`
    SELECT channel, count(*)::int AS tasks,
      percentile_cont(0.5) WITHIN GROUP (ORDER BY (completed_at - created_at) * 1000) AS p50,
      percentile_cont(0.95) WITHIN GROUP (ORDER BY (completed_at - created_at) * 1000) AS p95
    FROM tasks WHERE status = 'succeeded' AND completed_at >= ${daySince}
    GROUP BY channel ORDER BY channel`
    const failures = yield* sql<{ code: string; count: number }>`
    SELECT coalesce(error->>'code', 'unknown') AS code, count(*)::int AS count
    FROM tasks WHERE status = 'failed' AND completed_at >= ${daySince}
    GROUP BY 1 ORDER BY 2 DESC, 1`
    const credits = yield* sql<{ day: number; kind: string; micros: number }>`
    SELECT (created_at / ${DAY_S}) * ${DAY_S} AS day, kind,
      sum(abs(wallet_micros) + abs(subscription_micros)) AS micros
    FROM ledger WHERE kind IN ('charge', 'refund') AND created_at >= ${firstDay} GROUP BY 1, 2`

    // Who still uses a deprecated model: its callers and tasks of the last 30 days, from the usage report's days.
    const users = deprecated.length === 0 ? [] : yield* sql<{ model: string; accounts: number; tasks: number }>`
    SELECT model, count(DISTINCT account_id)::int AS accounts, sum(tasks)::int AS tasks
    FROM usage_daily
    WHERE day >= ${Math.floor(nowS / DAY_S) - 29} AND tasks > 0 AND ${sql.in("model", deprecated.map((d) => d.model))}
    GROUP BY model`

    const hours = Array.from({ length: 24 }, (_, i) => firstHour + i * HOUR_S)
    const days = Array.from({ length: 14 }, (_, i) => firstDay + i * DAY_S)
    const countAt = (hour: number, status: string) =>
      perHour.find((r) => Number(r.hour) === hour && r.status === status)?.count ?? 0
    const creditsAt = (day: number, kind: string) =>
      toCredits(Number(credits.find((r) => Number(r.day) === day && r.kind === kind)?.micros ?? 0))
    const ms = (value: number | null) => (value === null ? null : Math.round(Number(value)))

    const answer: Overview = {
      object: "console.overview",
      generated_at: nowS,
      tasks_per_hour: hours.map((hour) => ({
        hour,
        queued: countAt(hour, "queued"),
        in_progress: countAt(hour, "in_progress"),
        succeeded: countAt(hour, "succeeded"),
        failed: countAt(hour, "failed")
      })),
      time_to_result: times.map((r) => ({ channel: r.channel, tasks: r.tasks, p50_ms: ms(r.p50), p95_ms: ms(r.p95) })),
      failures_by_code: failures.map((r) => ({ code: r.code, count: r.count })),
      credits_per_day: days.map((day) => ({
        day,
        charged: creditsAt(day, "charge"),
        refunded: creditsAt(day, "refund")
      })),
      deprecated_models: deprecated.map((d) => {
        const used = users.find((u) => u.model === d.model)
        return {
          model: d.model,
          sunset: d.sunset,
          successor: d.successor ?? null,
          accounts: used?.accounts ?? 0,
          tasks: used?.tasks ?? 0
        }
      })
    }
    return answer
  }).pipe(Effect.orDie)

/** The overview with the registry's deprecated models that are still offered. */
export const overview = Effect.gen(function*() {
  const registry = yield* Registry
  const nowS = Math.floor((yield* Clock.currentTimeMillis) / 1000)
  return yield* overviewWith(
    [...registry.videoModels, ...registry.imageModels].flatMap((m) =>
      m.settings.deprecated === undefined || nowS >= m.settings.deprecated.sunset
        ? []
        : [{ model: m.capability.id, ...m.settings.deprecated }]
    )
  )
})
