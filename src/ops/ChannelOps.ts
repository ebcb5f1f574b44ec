import { Effect } from "effect"
import { Channels } from "../channel/Channels.ts"
import type { ChannelStateName } from "../channel/ChannelState.ts"
import { ChannelStates } from "../channel/ChannelStates.ts"
import { ChannelNotFound } from "../channel/Errors.ts"
import type { CheckResult } from "./ChannelsApi.ts"
import { channelViews } from "./ChannelView.ts"

/**
 * The channel operations behind both doors: the admin API (ChannelsHttp.ts,
 * bearer admin token) and the operator's console pages (src/console/Http.ts,
 * cookie session and CSRF token). One code path, so both log and answer
 * alike; each handler reads the request's optional reason itself.
 */

const known = (name: string) =>
  Effect.flatMap(Channels, (channels) => {
    const channel = channels.get(name)
    return channel === undefined
      ? Effect.fail(new ChannelNotFound({ message: `No channel named "${name}" is configured.` }))
      : Effect.succeed(channel)
  })

/** One channel's view. */
export const channelView = (name: string) => Effect.map(channelViews(name), (views) => views[0]!)

/** Every configured channel's view. */
export const channelList = channelViews().pipe(
  // Only a named channel can be missing.
  Effect.catchTag("ChannelNotFound", Effect.die),
  Effect.map((data) => ({ object: "list" as const, data }))
)

/** Sets the state an operator chose, with the reason they gave (or none); answers the new view. */
export const setChannelState = <E, R>(
  name: string,
  state: ChannelStateName,
  reasonOf: Effect.Effect<string | null, E, R>
) =>
  Effect.gen(function*() {
    yield* known(name)
    const reason = yield* reasonOf
    yield* (yield* ChannelStates).set(name, state, reason)
    yield* Effect.logInfo("channel state set").pipe(Effect.annotateLogs({ channel: name, state, reason }))
    return yield* channelView(name)
  })

/** Asks the upstream whether the channel's credentials and address work. */
export const checkChannel = (name: string) =>
  Effect.gen(function*() {
    const checked = yield* (yield* Channels).check(yield* known(name))
    yield* Effect.logInfo("channel checked").pipe(
      Effect.annotateLogs({ channel: name, result: checked.result, detail: checked.detail })
    )
    const answer: typeof CheckResult.Type = {
      ok: checked.result === "ok",
      result: checked.result,
      detail: checked.detail,
      latency_ms: Math.max(0, Math.round(checked.latencyMs))
    }
    return answer
  })
