import { HttpApiBuilder, HttpServerRequest } from "@effect/platform"
import { Effect, Layer } from "effect"
import { AdminAuthLive } from "../accounts/Auth.ts"
import { GatewayApi } from "../Api.ts"
import { Channels } from "../channel/Channels.ts"
import type { ChannelStateName } from "../channel/ChannelState.ts"
import { ChannelStates } from "../channel/ChannelStates.ts"
import { ChannelNotFound } from "../channel/Errors.ts"
import { readJson } from "../platform/http/Body.ts"
import { StateChange } from "./ChannelsApi.ts"
import { channelViews } from "./ChannelView.ts"

/** The body is optional: none (no Content-Type, no length) is no reason. */
const reasonOf = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  const length = request.headers["content-length"]
  const empty = request.headers["content-type"] === undefined &&
    (length === undefined || length === "0") && request.headers["transfer-encoding"] === undefined
  if (empty) return null
  return (yield* readJson(StateChange)).reason ?? null
})

/** `/admin/v1/channels` (ChannelsApi.ts), behind the admin token like the rest of the admin API. */
export const AdminChannelsLive = HttpApiBuilder.group(
  GatewayApi,
  "adminChannels",
  (handlers) =>
    Effect.gen(function*() {
      const channels = yield* Channels
      const states = yield* ChannelStates
      const one = (name: string) => Effect.map(channelViews(name), (views) => views[0]!)
      const known = (name: string) =>
        channels.get(name) === undefined
          ? Effect.fail(new ChannelNotFound({ message: `No channel named "${name}" is configured.` }))
          : Effect.succeed(channels.get(name)!)
      const setState = (name: string, state: ChannelStateName) =>
        Effect.gen(function*() {
          yield* known(name)
          const reason = yield* reasonOf
          yield* states.set(name, state, reason)
          yield* Effect.logInfo("channel state set").pipe(Effect.annotateLogs({ channel: name, state, reason }))
          return yield* one(name)
        })
      return handlers
        .handle("listChannels", () =>
          channelViews().pipe(
            // Only a named channel can be missing.
            Effect.catchTag("ChannelNotFound", Effect.die),
            Effect.map((data) => ({ object: "list" as const, data }))
          ))
        .handle("getChannel", ({ path }) => one(path.name))
        .handle("enableChannel", ({ path }) => setState(path.name, "enabled"))
        .handle("drainChannel", ({ path }) => setState(path.name, "draining"))
        .handle("disableChannel", ({ path }) => setState(path.name, "disabled"))
        .handle("checkChannel", ({ path }) =>
          Effect.gen(function*() {
            const checked = yield* channels.check(yield* known(path.name))
            yield* Effect.logInfo("channel checked").pipe(
              Effect.annotateLogs({ channel: path.name, result: checked.result, detail: checked.detail })
            )
            return {
              ok: checked.result === "ok",
              result: checked.result,
              detail: checked.detail,
              latency_ms: Math.max(0, Math.round(checked.latencyMs))
            }
          }))
    })
).pipe(Layer.provide(AdminAuthLive))
