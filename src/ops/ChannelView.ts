import { Clock, Effect } from "effect"
import { baseUrlOf, Channels, type LoadedChannel } from "../channel/Channels.ts"
import { ChannelStates } from "../channel/ChannelStates.ts"
import { ChannelNotFound } from "../channel/Errors.ts"
import { channelActivity } from "./ChannelActivity.ts"
import type { ChannelObject } from "./ChannelsApi.ts"

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

    const { attempts, breakers, errors, load, times } = yield* channelActivity(names, now)

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
