import { HttpApiBuilder, HttpApiScalar } from "@effect/platform"
import { Layer } from "effect"
import { GatewayApi } from "../api/Api.ts"
import { AdminLive } from "./Admin.ts"
import { AssetsLive } from "./Assets.ts"
import { ImagesLive } from "./ImagesSync.ts"
import { gatewayMiddleware } from "./Middleware.ts"
import { ModelsLive } from "./Models.ts"
import { OpsLive } from "./Ops.ts"
import { StorageLive } from "./Storage.ts"
import { TaskCreateLive, TaskReadLive } from "./Tasks.ts"
import { UploadsLive } from "./Uploads.ts"

export const ApiLive = HttpApiBuilder.api(GatewayApi).pipe(
  Layer.provide([OpsLive, AdminLive, ModelsLive, TaskReadLive, TaskCreateLive, ImagesLive, StorageLive, AssetsLive, UploadsLive])
)

/** The HTTP application: the contract's handlers, `/openapi.json`, `/docs`, wrapped by the gateway middleware. */
export const HttpAppLive = HttpApiBuilder.serve().pipe(
  // Inside the app, so that errors become spec bodies before the server writes anything.
  Layer.provide(HttpApiBuilder.middleware(gatewayMiddleware)),
  Layer.provide(HttpApiScalar.layer({ path: "/docs" })),
  Layer.provide(HttpApiBuilder.middlewareOpenApi({ path: "/openapi.json" })),
  Layer.provide(ApiLive)
)
