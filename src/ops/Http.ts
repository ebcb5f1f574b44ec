import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { GatewayApi } from "../Api.ts"
import { ApiError } from "../platform/http/Errors.ts"
import { isReady } from "../platform/Database.ts"

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
