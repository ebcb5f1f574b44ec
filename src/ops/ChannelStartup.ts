import { Config, Effect } from "effect"
import { baseUrlOf, Channels } from "../channel/Channels.ts"
import { ChannelStates } from "../channel/ChannelStates.ts"

/**
 * At start, one log line per configured channel: its adapter, the upstream
 * it talks to and its state (never a secret: credentials are not settings
 * that are logged). With `CHECK_CHANNELS=1`, every channel's check runs
 * beside the start and logs its result; a failed check never stops it.
 */
export const channelStartup = Effect.gen(function*() {
  const channels = yield* Channels
  const states = yield* ChannelStates
  for (const channel of channels.all) {
    const { reason, state } = yield* states.get(channel.name)
    yield* Effect.logInfo("channel configured").pipe(
      Effect.annotateLogs({
        channel: channel.name,
        adapter: channel.adapter.name,
        base_url: baseUrlOf(channel),
        state,
        ...(reason === null ? {} : { reason })
      })
    )
  }
  const checkAll = yield* Config.withDefault(Config.boolean("CHECK_CHANNELS"), false)
  if (!checkAll) return
  yield* Effect.forEach(channels.all, (channel) =>
    channels.check(channel).pipe(
      Effect.flatMap((checked) => {
        const log = checked.result === "ok" ? Effect.logInfo : Effect.logWarning
        return log("channel check").pipe(
          Effect.annotateLogs({
            channel: channel.name,
            result: checked.result,
            detail: checked.detail,
            latency_ms: Math.round(checked.latencyMs)
          })
        )
      })
    ), { concurrency: 4, discard: true }).pipe(Effect.forkDaemon)
})
