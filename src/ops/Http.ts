import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { GatewayApi } from "../Api.ts"
import { isReady } from "../platform/Database.ts"
import { NotReady } from "./Errors.ts"

export const OpsLive = HttpApiBuilder.group(GatewayApi, "ops", (handlers) =>
  handlers
    .handle("healthz", () => Effect.succeed({ status: "ok" as const }))
    .handle("readyz", () =>
      Effect.flatMap(isReady, (ready) =>
        ready
          ? Effect.succeed({ status: "ok" as const })
          : Effect.fail(new NotReady({ message: "The database is unreachable or migrations are not applied." })))))
