import { Context, Effect, Layer } from "effect"
import { AppConfig } from "../platform/AppConfig.ts"
import { constantTimeEqual } from "../platform/Keys.ts"
import { Secrets } from "../platform/Secrets.ts"
import { Channels, type LoadedChannel } from "./Channels.ts"
import type { UpstreamCallbacks } from "./contract/Callbacks.ts"

/** Where upstream callbacks arrive; the last segment is a channel's token. */
export const CALLBACK_PATH = "/v1/upstream-callbacks"

export interface CallbackChannel {
  readonly channel: LoadedChannel
  readonly callbacks: UpstreamCallbacks
}

/**
 * The callback URL of each channel that takes callbacks (`callbacks: true`
 * and an adapter that can read them), and the way back from a URL's token to
 * its channel. The token is an HMAC of the channel's name (Secrets.ts), so it
 * reveals no name, cannot be guessed or forged, and is the same on every
 * replica; a channel whose callbacks are off has no URL at all.
 */
export class CallbackTokens extends Context.Tag("CallbackTokens")<CallbackTokens, {
  /** The URL to give the upstream in this channel's submits, or undefined when it takes no callbacks. */
  readonly urlOf: (channel: string) => string | undefined
  /** The channel a token names, compared in constant time with every token; undefined for any other string. */
  readonly channelOf: (token: string) => CallbackChannel | undefined
}>() {
  static readonly layer = Layer.effect(
    CallbackTokens,
    Effect.gen(function*() {
      const channels = yield* Channels
      const secrets = yield* Secrets
      const { publicBaseUrl } = yield* AppConfig
      const entries = yield* Effect.forEach(
        channels.all.filter((c) => c.settings.callbacks && c.adapter.callbacks !== undefined),
        (channel) =>
          Effect.map(secrets.callbackToken(channel.name), (token) => ({
            token,
            url: `${publicBaseUrl}${CALLBACK_PATH}/${token}`,
            entry: { channel, callbacks: channel.adapter.callbacks!(channel) } satisfies CallbackChannel
          }))
      )
      const urls = new Map(entries.map((e) => [e.entry.channel.name, e.url]))
      return {
        urlOf: (channel) => urls.get(channel),
        channelOf: (token) => {
          // Every token is compared, so the time taken says nothing about which one came close.
          let found: CallbackChannel | undefined
          for (const e of entries) if (constantTimeEqual(token, e.token)) found = e.entry
          return found
        }
      }
    })
  )
}
