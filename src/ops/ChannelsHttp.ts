import { HttpApiBuilder } from "@effect/platform"
import { Effect, Layer } from "effect"
import { AdminAuthLive } from "../accounts/Auth.ts"
import { GatewayApi } from "../Api.ts"
import { channelList, channelView, checkChannel, setChannelState } from "./ChannelOpsHttp.ts"

/** `/admin/v1/channels` (ChannelsApi.ts), behind the admin token like the rest of the admin API. */
export const AdminChannelsLive = HttpApiBuilder.group(
  GatewayApi,
  "adminChannels",
  (handlers) =>
    Effect.succeed(
      handlers
        .handle("listChannels", () => channelList)
        .handle("getChannel", ({ path }) => channelView(path.name))
        .handle("enableChannel", ({ path }) => setChannelState(path.name, "enabled"))
        .handle("drainChannel", ({ path }) => setChannelState(path.name, "draining"))
        .handle("disableChannel", ({ path }) => setChannelState(path.name, "disabled"))
        .handle("checkChannel", ({ path }) => checkChannel(path.name))
    )
).pipe(Layer.provide(AdminAuthLive))
