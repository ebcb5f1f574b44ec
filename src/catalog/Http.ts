import { HttpApiBuilder } from "@effect/platform"
import { Effect, Layer } from "effect"
import { AnyKeyAuthLive } from "../accounts/Auth.ts"
import { CurrentPrincipal } from "../accounts/Security.ts"
import { GatewayApi } from "../Api.ts"
import { groupMultiplier } from "../billing/Billing.ts"
import { AppConfig } from "../platform/AppConfig.ts"
import { Registry, type ServedModel } from "./Registry.ts"

export const ModelsLive = HttpApiBuilder.group(GatewayApi, "models", (handlers) =>
  Effect.gen(function*() {
    const registry = yield* Registry
    const { groups } = yield* AppConfig
    return handlers.handle("listModels", () =>
      Effect.map(CurrentPrincipal, (principal) => {
        const multiplier = groupMultiplier(groups, principal.group)
        const listed = <C extends { readonly id: string }>(
          type: "video" | "image",
          models: ReadonlyArray<ServedModel<C>>
        ) =>
          models.map(({ capability: { id, ...capabilities }, family, ownedBy, settings, price }) => ({
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
            }
          }))
        return {
          object: "list" as const,
          data: [...listed("video", registry.videoModels), ...listed("image", registry.imageModels)]
        }
      }))
  })).pipe(Layer.provide(AnyKeyAuthLive))
