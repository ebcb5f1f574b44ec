import { HttpApiBuilder } from "@effect/platform"
import { Effect, Layer } from "effect"
import { AdminAuthLive } from "../accounts/Auth.ts"
import { GatewayApi } from "../Api.ts"
import type { ChannelStateName } from "../channel/ChannelState.ts"
import { readOptionalJson } from "../platform/http/Body.ts"
import { readQuery } from "../platform/http/ListQuery.ts"
import { channelList, channelView, checkChannel, setChannelState } from "./ChannelOps.ts"
import { ReconcileWindow, StateChange } from "./ChannelsApi.ts"
import { reconcileChannel } from "./Reconciliation.ts"

/** The body is optional: none is no reason. */
const reason = Effect.map(readOptionalJson(StateChange), (body) => body?.reason ?? null)
const setState = (name: string, state: ChannelStateName) => setChannelState(name, state, reason)

/** `/admin/v1/channels` (ChannelsApi.ts), behind the admin token like the rest of the admin API. */
export const AdminChannelsLive = HttpApiBuilder.group(
  GatewayApi,
  "adminChannels",
  (handlers) =>
    Effect.succeed(
      handlers
        .handle("listChannels", () => channelList)
        .handle("getChannel", ({ path }) => channelView(path.name))
        .handle("enableChannel", ({ path }) => setState(path.name, "enabled"))
        .handle("drainChannel", ({ path }) => setState(path.name, "draining"))
        .handle("disableChannel", ({ path }) => setState(path.name, "disabled"))
        .handle("checkChannel", ({ path }) => checkChannel(path.name))
        .handle(
          "reconcileChannel",
          ({ path }) => Effect.flatMap(readQuery(ReconcileWindow), (window) => reconcileChannel(path.name, window))
        )
    )
).pipe(Layer.provide(AdminAuthLive))
