import { HttpApiBuilder } from "@effect/platform"
import { Clock, Effect, Layer } from "effect"
import { AnyKeyAuthLive } from "../accounts/Auth.ts"
import { CurrentPrincipal } from "../accounts/Security.ts"
import { GatewayApi } from "../Api.ts"
import { groupMultiplier } from "../billing/Billing.ts"
import { AppConfig } from "../platform/AppConfig.ts"
import { UnsupportedModel } from "./Errors.ts"
import { Registry, type ServedModel } from "./Registry.ts"

export const ModelsLive = HttpApiBuilder.group(GatewayApi, "models", (handlers) =>
  Effect.gen(function*() {
    const registry = yield* Registry
    const { groups } = yield* AppConfig
    const list = Effect.gen(function*() {
      const principal = yield* CurrentPrincipal
      const now = Math.floor((yield* Clock.currentTimeMillis) / 1000)
      const multiplier = groupMultiplier(groups, principal.group)
      const listed = <C extends { readonly id: string }>(
        type: "video" | "image",
        models: ReadonlyArray<ServedModel<C>>
      ) =>
        models.flatMap(({ capability: { id, ...capabilities }, family, ownedBy, settings, price }) => {
          const deprecated = settings.deprecated
          // Past its sunset a model is no longer offered (its creates are refused).
          if (deprecated !== undefined && now >= deprecated.sunset) return []
          const model = {
            id,
            object: "model" as const,
            type,
            family,
            owned_by: ownedBy,
            capabilities,
            pricing: {
              unit: type === "video" ? "second" as const : "image" as const,
              currency: "credit" as const,
              price,
              effective_price: Math.round(price * multiplier * 1e6) / 1e6,
              group: principal.group,
              group_multiplier: multiplier,
              subscription_allowed: settings.subscription
            },
            ...(deprecated === undefined ? {} : {
              deprecation: {
                since: deprecated.since,
                sunset: deprecated.sunset,
                successor: deprecated.successor ?? null
              }
            })
          }
          // Each alias of the model is listed beside it, as what it names.
          const aliases = [...registry.aliases].filter(([, target]) => target === id)
          return [model, ...aliases.map(([alias]) => ({ ...model, id: alias, alias_of: id }))]
        })
      return [...listed("video", registry.videoModels), ...listed("image", registry.imageModels)]
    })
    return handlers
      .handle("listModels", () => Effect.map(list, (data) => ({ object: "list" as const, data })))
      .handle("getModel", ({ path }) =>
        Effect.flatMap(list, (data) => {
          const found = data.find((m) => m.id === path.model)
          return found !== undefined ? Effect.succeed(found) : Effect.fail(
            new UnsupportedModel({
              code: registry.image(registry.resolve(path.model)) !== undefined
                ? "unsupported_image_model"
                : "unsupported_video_model",
              message: `No model "${path.model}" is offered.`
            })
          )
        }))
  })).pipe(Layer.provide(AnyKeyAuthLive))
