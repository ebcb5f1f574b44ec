import { SqlClient } from "@effect/sql"
import { Clock, Effect } from "effect"
import { baseUrlOf, Channels, type LoadedChannel } from "../channel/Channels.ts"
import { ChannelStates } from "../channel/ChannelStates.ts"
import { ChannelNotFound } from "../channel/Errors.ts"
import type { ChannelObject } from "./ChannelsApi.ts"

/** The window of a channel's recent counts and times. */
const RECENT_S = 15 * 60
/** A replica's breaker report older than this is left out: the replica stopped or lost its database. */
const BREAKER_REPORT_MAX_AGE_MS = 60_000

/** The attempt outcomes that are failures of the attempt itself (failover is counted apart). */
const FAILED = ["failed", "refused", "ambiguous", "deadline", "no_output", "fetch_failed", "storage_unavailable"]

/**
 * The operator's view of the configured channels (docs/operating.md,
 * Channels), read from the database so every replica answers alike: the
 * state an operator set, the load (in flight against `concurrency`, queued),
 * each replica's breaker as it last reported it, the last 15 minutes'
 * attempts and times to result, and the upstream's last refusal in its own
 * words.
 */
export const channelViews = (only?: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const channels = yield* Channels
    const states = yield* ChannelStates
    const picked: ReadonlyArray<LoadedChannel> = only === undefined
      ? channels.all
      : channels.all.filter((c) => c.name === only)
    if (only !== undefined && picked.length === 0) {
      return yield* new ChannelNotFound({ message: `No channel named "${only}" is configured.` })
    }
    const names = picked.map((c) => c.name)
    const now = yield* Clock.currentTimeMillis
    const since = Math.floor(now / 1000) - RECENT_S

    const load = yield* sql<{ channel: string; in_flight: number; queued: number }>`
      SELECT channel,
        count(*) FILTER (WHERE run_state IN ('running', 'waiting', 'polling'))::int AS in_flight,
        count(*) FILTER (WHERE status = 'queued')::int AS queued
      FROM tasks WHERE channel IN ${sql.in(names)} AND status IN ('queued', 'in_progress') GROUP BY channel`
    const attempts = yield* sql<
      { channel: string; submitted: number; succeeded: number; failed: number; failed_over: number }
    >`
      SELECT channel, count(*)::int AS submitted,
        count(*) FILTER (WHERE outcome = 'succeeded')::int AS succeeded,
        count(*) FILTER (WHERE outcome IN ${sql.in(FAILED)})::int AS failed,
        count(*) FILTER (WHERE outcome = 'failover')::int AS failed_over
      FROM task_attempts WHERE channel IN ${sql.in(names)} AND created_at >= ${since} GROUP BY channel`
    const times = yield* sql<{ channel: string; p50: number | null; p95: number | null }>`
      SELECT channel,
        percentile_cont(0.5) WITHIN GROUP (ORDER BY (completed_at - created_at) * 1000) AS p50,
        percentile_cont(0.95) WITHIN GROUP (ORDER BY (completed_at - created_at) * 1000) AS p95
      FROM tasks WHERE channel IN ${sql.in(names)} AND status = 'succeeded' AND completed_at >= ${since}
      GROUP BY channel`
    const errors = yield* sql<
      { channel: string; at: number; status: number | null; code: string | null; message: string | null }
    >`
      SELECT DISTINCT ON (channel) channel, updated_at AS at, upstream_status AS status, upstream_code AS code,
        upstream_message AS message
      FROM task_attempts
      WHERE channel IN ${sql.in(names)} AND (upstream_status IS NOT NULL OR upstream_code IS NOT NULL)
      ORDER BY channel, updated_at DESC`
    const breakers = yield* sql<{ channel: string; replica: string; open_until: number; reported_at: number }>`
      SELECT channel, replica, open_until, reported_at FROM channel_breakers
      WHERE channel IN ${sql.in(names)} AND reported_at >= ${now - BREAKER_REPORT_MAX_AGE_MS}
      ORDER BY channel, replica`

    const byChannel = <R extends { readonly channel: string }>(rows: ReadonlyArray<R>) =>
      new Map(rows.map((r) => [r.channel, r]))
    const loads = byChannel(load)
    const counts = byChannel(attempts)
    const durations = byChannel(times)
    const lastErrors = byChannel(errors)
    const ms = (value: number | null | undefined) =>
      value === null || value === undefined ? null : Math.round(Number(value))

    return yield* Effect.forEach(picked, (channel) =>
      Effect.gen(function*() {
        const state = yield* states.get(channel.name)
        const count = counts.get(channel.name)
        const time = durations.get(channel.name)
        const error = lastErrors.get(channel.name)
        const view: ChannelObject = {
          object: "channel",
          name: channel.name,
          adapter: channel.adapter.name,
          kinds: channel.adapter.kinds,
          base_url: baseUrlOf(channel),
          state: state.state,
          reason: state.reason,
          state_changed_at: state.updatedAt,
          concurrency: channel.settings.concurrency,
          in_flight: loads.get(channel.name)?.in_flight ?? 0,
          waiting: loads.get(channel.name)?.queued ?? 0,
          breakers: breakers.filter((b) => b.channel === channel.name).map((b) => ({
            replica: b.replica,
            open: Number(b.open_until) > now,
            open_until: Number(b.open_until) > now ? Number(b.open_until) : null,
            reported_at: Number(b.reported_at)
          })),
          last_15_minutes: {
            submitted: count?.submitted ?? 0,
            succeeded: count?.succeeded ?? 0,
            failed: count?.failed ?? 0,
            failed_over: count?.failed_over ?? 0,
            p50_ms: ms(time?.p50),
            p95_ms: ms(time?.p95)
          },
          last_upstream_error: error === undefined
            ? null
            : { at: Number(error.at), status: error.status, code: error.code, message: error.message }
        }
        return view
      }))
  }).pipe(Effect.catchTag("SqlError", Effect.die))
