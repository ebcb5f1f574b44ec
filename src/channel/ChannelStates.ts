import { SqlClient } from "@effect/sql"
import { Clock, Context, Effect, Layer, Schedule, Schema, Stream } from "effect"
import { makeListen } from "../platform/Notifications.ts"
import { ChannelStateName } from "./ChannelState.ts"

export interface ChannelState {
  readonly state: ChannelStateName
  readonly reason: string | null
  /** When an operator last set it (ms); null for a channel never set (enabled). */
  readonly updatedAt: number | null
}

const ENABLED: ChannelState = { state: "enabled", reason: null, updatedAt: null }

/** The NOTIFY channel a change of state signals on; the payload is the channel's name. */
export const STATE_CHANNEL = "channel_states"

/** How often every replica reads the states again, whatever the notifications do: a change reaches it within this. */
const REREAD = "1 second"

const Row = Schema.Struct({
  channel: Schema.String,
  state: ChannelStateName,
  reason: Schema.NullOr(Schema.String),
  updated_at: Schema.Union(Schema.Number, Schema.NumberFromString)
})

export interface ChannelStatesService {
  /** The channel's state as this replica last read it (the first call reads the database). */
  readonly get: (channel: string) => Effect.Effect<ChannelState>
  /** Whether the channel takes new tasks (only `enabled` does). */
  readonly takesNew: (channel: string) => Effect.Effect<boolean>
  /** Sets a channel's state, stored and announced to every replica; the state as stored. */
  readonly set: (channel: string, state: ChannelStateName, reason: string | null) => Effect.Effect<ChannelState>
}

/**
 * The channel states, stored in `channel_states` (no row: enabled) so they
 * hold across restarts. Each replica keeps a copy, read again when a NOTIFY
 * says one changed and every second regardless (a lost listener delays a
 * change by at most that), so a change reaches every replica within 2 s.
 */
export class ChannelStates extends Context.Tag("ChannelStates")<ChannelStates, ChannelStatesService>() {
  static readonly layer = Layer.scoped(
    ChannelStates,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const listen = yield* makeListen
      let states = new Map<string, ChannelState>()
      let loaded = false

      const read = Effect.gen(function*() {
        const rows = yield* sql`SELECT channel, state, reason, updated_at FROM channel_states`.pipe(
          Effect.flatMap(Schema.decodeUnknown(Schema.Array(Row)))
        )
        states = new Map(
          rows.map((r) => [r.channel, { state: r.state, reason: r.reason, updatedAt: Number(r.updated_at) }])
        )
        loaded = true
      })
      // Read before first use: a replica that starts must not route to a channel an operator disabled.
      const current = (channel: string) =>
        Effect.map(loaded ? Effect.void : Effect.orDie(read), () => states.get(channel) ?? ENABLED)

      // Before the migrations ran (the first start) the table is missing: read again on the next beat.
      yield* read.pipe(
        Effect.catchAll((e) => Effect.logDebug("channel states not read", e)),
        Effect.repeat(Schedule.spaced(REREAD)),
        Effect.forkScoped
      )
      yield* listen(STATE_CHANNEL).pipe(
        Stream.runForEach(() => Effect.ignore(read)),
        Effect.retry(Schedule.spaced(REREAD)),
        Effect.ignore,
        Effect.forkScoped
      )

      const set = (channel: string, state: ChannelStateName, reason: string | null) =>
        Effect.gen(function*() {
          const now = yield* Clock.currentTimeMillis
          yield* sql`
            INSERT INTO channel_states (channel, state, reason, updated_at) VALUES (${channel}, ${state}, ${reason}, ${now})
            ON CONFLICT (channel) DO UPDATE SET state = EXCLUDED.state, reason = EXCLUDED.reason,
              updated_at = EXCLUDED.updated_at`
          yield* sql`SELECT pg_notify(${STATE_CHANNEL}, ${channel})`
          yield* read
          return states.get(channel) ?? ENABLED
        }).pipe(Effect.orDie)

      return {
        get: current,
        takesNew: (channel) => Effect.map(current(channel), (s) => s.state === "enabled"),
        set
      }
    })
  )
}
