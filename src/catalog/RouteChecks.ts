import { Effect } from "effect"
import type { ChannelsService } from "../channel/Channels.ts"
import type { AnyAdapter, TaskKind, UsageUnit } from "../channel/contract/Adapter.ts"
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
    if (refusal !== undefined) {
      return Effect.fail(
        new ConfigurationError({
          message:
            `config models.json: at models.${model}, channel "${route.channel}": upstream_model "${route.upstreamModel}": ${refusal}`
        })
      )
    }
    const costRefusal = channel === undefined ? undefined : costProblem(kind, route, channel.adapter)
    return costRefusal === undefined ? Effect.void : Effect.fail(
      new ConfigurationError({
        message: `config models.json: at models.${model}, channel "${route.channel}": cost.unit: ${costRefusal}`
      })
    )
  }, { discard: true })

/** The units the engine counts itself for a kind (docs/configuration.md, Routes: cost): its output's own and tasks. */
const COUNTED: Record<TaskKind, ReadonlyArray<UsageUnit>> = { video: ["second", "task"], image: ["image", "task"] }

/**
 * Why a route's `cost` cannot be priced, if it cannot: a unit the kind has no
 * count of (seconds of an image), or one only the provider can count (tokens)
 * where the adapter reports none, would leave every attempt's cost unknown.
 */
const costProblem = (kind: TaskKind, route: ModelRoute, adapter: AnyAdapter): string | undefined => {
  const unit = route.cost?.unit
  if (unit === undefined || COUNTED[kind].includes(unit)) return undefined
  const reported = adapter.usageUnits?.[kind] ?? []
  if (reported.includes(unit)) return undefined
  const known = [...COUNTED[kind], ...reported].map((u) => `"${u}"`).join(", ")
  return `"${unit}" is not counted for ${kind} tasks on the ${adapter.name} adapter (it counts ${known})`
}
