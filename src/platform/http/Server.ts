import { HttpApiBuilder, HttpApiScalar, HttpRouter } from "@effect/platform"
import { Layer } from "effect"
import { GatewayApi } from "../../Api.ts"
import { AdminLive } from "../../accounts/Http.ts"
import { AssetsLive } from "../../tasks/AssetsHttp.ts"
import { ImagesLive } from "../../tasks/ImagesHttp.ts"
import { gatewayMiddleware } from "./Middleware.ts"
import { ModelsLive } from "../../catalog/Http.ts"
import { OpsLive } from "../../ops/Http.ts"
import { DOCS_PATH } from "./SecurityHeaders.ts"
import { StorageLive } from "../../storage/Http.ts"
import { TaskCreateLive, TaskReadLive } from "../../tasks/Http.ts"
import { UploadsLive } from "../../uploads/Http.ts"

export const ApiLive = HttpApiBuilder.api(GatewayApi).pipe(
  Layer.provide([OpsLive, AdminLive, ModelsLive, TaskReadLive, TaskCreateLive, ImagesLive, StorageLive, AssetsLive, UploadsLive])
)

/** The HTTP application: the contract's handlers, `/openapi.json`, `/docs`, wrapped by the gateway middleware. */
export const HttpAppLive = HttpApiBuilder.serve().pipe(
  // Inside the app, so that errors become spec bodies before the server writes anything.
  Layer.provide(HttpApiBuilder.middleware(gatewayMiddleware)),
  // No limit on a path parameter's length (the router's default is 100): a
  // longer id missed every route and the miss answered 405. The handlers
  // look any id up, after authentication, and answer their own 404.
  Layer.provide(HttpRouter.setRouterConfig({ maxParamLength: Number.MAX_SAFE_INTEGER })),
  Layer.provide(HttpApiScalar.layer({ path: DOCS_PATH })),
  Layer.provide(HttpApiBuilder.middlewareOpenApi({ path: "/openapi.json" })),
  Layer.provide(ApiLive),
  // The router's default refuses a path parameter over 100 characters as no route at all, which the
  // middleware reports as 405; an over-long id should reach its handler and be an unknown id (404).
  // The server's limit on the request line still bounds it.
  Layer.locally(HttpRouter.currentRouterConfig, { maxParamLength: Number.MAX_SAFE_INTEGER })
)
