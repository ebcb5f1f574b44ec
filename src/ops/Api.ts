import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"

export const Health = Schema.Struct({ status: Schema.Literal("ok") })

export class OpsApi extends HttpApiGroup.make("ops")
  .add(HttpApiEndpoint.get("healthz", "/healthz").addSuccess(Health))
  .add(HttpApiEndpoint.get("readyz", "/readyz").addSuccess(Health))
  .annotate(OpenApi.Title, "Operations")
  .annotate(OpenApi.Description, "Liveness (process up) and readiness (database reachable, migrations applied)")
{}
