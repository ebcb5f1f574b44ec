import { Effect } from "effect"
import type { ChannelsService } from "../channel/Channels.ts"
import type { ProviderOptions, TaskKind } from "../channel/contract/Adapter.ts"
import { ConfigurationError } from "../platform/AppConfig.ts"
import type { ModelRoute } from "../platform/Settings.ts"

/**
 * The `provider_options` a model accepts: its family's namespaces plus those
 * of the adapter of every channel it is routed to (the union, so an option
 * accepted at creation still means something on whichever channel the task
 * fails over to; an adapter ignores other adapters' namespaces). A
 * namespace of an adapter the model is not routed to stays unknown (400
 * `invalid_provider_options`). Checked here too: each channel serves the
 * model's kind, and one namespace is not declared twice with different fields.
 */
export const routedOptions = (
  channels: ChannelsService,
  model: string,
  kind: TaskKind,
  family: ProviderOptions,
  routes: ReadonlyArray<ModelRoute>
) =>
  Effect.gen(function*() {
    const where = `config models.json: at models.${model}.channels`
    const options: Record<string, ProviderOptions[string]> = { ...family }
    const declaredBy = new Map(Object.keys(family).map((ns) => [ns, "its family"]))
    for (const route of routes) {
      const channel = channels.get(route.channel)
      if (channel === undefined) {
        return yield* new ConfigurationError({ message: `${where}: unknown channel "${route.channel}"` })
      }
      const adapter = channel.adapter
      if (!adapter.kinds.includes(kind)) {
        return yield* new ConfigurationError({
          message:
            `${where}: channel "${route.channel}" (adapter "${adapter.name}") does not serve ${kind} models; it serves ${
              adapter.kinds.join(", ")
            }`
        })
      }
      for (const [namespace, fields] of Object.entries(adapter.providerOptions[kind] ?? {})) {
        const earlier = options[namespace]
        if (earlier !== undefined && JSON.stringify(earlier) !== JSON.stringify(fields)) {
          return yield* new ConfigurationError({
            message: `${where}: provider_options.${namespace} of adapter "${adapter.name}" differs from the one of ${
              declaredBy.get(namespace)
            }`
          })
        }
        options[namespace] = fields
        declaredBy.set(namespace, `adapter "${adapter.name}"`)
      }
    }
    return options as ProviderOptions
  })
