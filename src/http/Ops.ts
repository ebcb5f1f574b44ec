import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { GatewayApi } from "../api/Api.ts"
import { ApiError } from "../api/Errors.ts"
import { isReady } from "../services/Database.ts"

export const OpsLive = HttpApiBuilder.group(GatewayApi, "ops", (handlers) =>
  handlers
    .handle("healthz", () => Effect.succeed({ status: "ok" as const }))
    .handle("readyz", () =>
      Effect.flatMap(isReady, (ready) =>
        ready
          ? Effect.succeed({ status: "ok" as const })
          : Effect.fail(
            new ApiError({
              status: 503,
              type: "api_error",
              code: "not_ready",
              message: "The database is unreachable or migrations are not applied."
            })
          ))))
