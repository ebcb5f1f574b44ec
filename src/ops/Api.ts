import { HttpApi, HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { InternalError } from "../platform/Failure.ts"
import { error } from "../platform/http/ErrorContract.ts"
import { NotReady } from "./Errors.ts"

export const Health = Schema.Struct({ status: Schema.Literal("ok") })

export class OpsApi extends HttpApiGroup.make("ops")
  .add(HttpApiEndpoint.get("healthz", "/healthz").addSuccess(Health))
  .add(HttpApiEndpoint.get("readyz", "/readyz").addSuccess(Health).addError(error(NotReady)))
  .annotate(OpenApi.Title, "Operations")
  .annotate(
    OpenApi.Description,
    "Liveness (process up) and readiness (database reachable with its migrations applied, object storage usable)"
  )
{}

/**
 * What a `ROLE=worker` replica answers on `OPS_PORT`: liveness and readiness
 * (and `/metrics`, beside it), nothing of the contract.
 */
export class WorkerOpsApi extends HttpApi.make("worker")
  .add(OpsApi)
  .addError(error(InternalError))
  .annotate(OpenApi.Title, "Media task gateway, worker replica")
{}
