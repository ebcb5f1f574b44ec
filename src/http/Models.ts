import { HttpApiBuilder } from "@effect/platform"
import { Effect, Layer } from "effect"
import { GatewayApi } from "../api/Api.ts"
import { CurrentPrincipal } from "../api/Security.ts"
import { groupMultiplier } from "../domain/Pricing.ts"
import { Registry } from "../services/Registry.ts"
import { AppConfig } from "../services/AppConfig.ts"
import { AnyKeyAuthLive } from "./Auth.ts"

export const ModelsLive = HttpApiBuilder.group(GatewayApi, "models", (handlers) =>
  Effect.gen(function*() {
    const registry = yield* Registry
    const { groups } = yield* AppConfig
    return handlers.handle("listModels", () =>
      Effect.map(CurrentPrincipal, (principal) => {
        const multiplier = groupMultiplier(groups, principal.group)
        return {
          object: "list" as const,
          data: registry.videoModels.map(({ capability: { id, ...capabilities }, family, ownedBy, settings }) => ({
            id,
            object: "model" as const,
            type: "video" as const,
            family,
            owned_by: ownedBy,
            capabilities,
            pricing: {
              unit: "second" as const,
              currency: "credit" as const,
              price: settings.price_per_second,
              effective_price: Math.round(settings.price_per_second * multiplier * 1e6) / 1e6,
              group: principal.group,
              group_multiplier: multiplier,
              subscription_allowed: settings.subscription
            }
          }))
        }
      }))
  })).pipe(Layer.provide(AnyKeyAuthLive))
