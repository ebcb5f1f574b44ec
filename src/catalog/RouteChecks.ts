import { Effect } from "effect"
import type { ChannelsService } from "../channel/Channels.ts"
import type { TaskKind } from "../channel/contract/Adapter.ts"
import { ConfigurationError } from "../platform/AppConfig.ts"
import type { ModelRoute } from "../platform/Settings.ts"

/**
 * Each route of a model asked of its channel's adapter, where the adapter
 * serves only upstream models it knows (`checkRoute`): a route it cannot
 * serve stops the boot with the adapter's words (which name what it knows),
 * rather than failing every task sent there. Unknown channels are reported
 * by routedOptions, which runs first.
 */
export const checkRoutes = (
  channels: ChannelsService,
  model: string,
  family: string,
  kind: TaskKind,
  routes: ReadonlyArray<ModelRoute>
) =>
  Effect.forEach(routes, (route) => {
    const channel = channels.get(route.channel)
    const refusal = channel?.adapter.checkRoute?.(channel, {
      model,
      family,
      kind,
      upstreamModel: route.upstreamModel
    })
    return refusal === undefined ? Effect.void : Effect.fail(
      new ConfigurationError({
        message:
          `config models.json: at models.${model}, channel "${route.channel}": upstream_model "${route.upstreamModel}": ${refusal}`
      })
    )
  }, { discard: true })
