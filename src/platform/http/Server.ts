import { HttpApi, HttpApiBuilder, HttpRouter } from "@effect/platform"
import { Effect, Layer } from "effect"
import { gatewayMiddleware } from "./Middleware.ts"
import { DOCS_PATH } from "./SecurityHeaders.ts"

/**
 * `path`, the API reference page, exactly as `HttpApiScalar.layer` serves it,
 * but made on its first request: the page inlines Scalar's script (3.3 MB of
 * JavaScript source), which would otherwise be loaded, and the page built
 * around it, at every start of every process.
 */
const scalarOnFirstRequest = (path: `/${string}`) =>
  HttpApiBuilder.Router.use((router) =>
    Effect.gen(function*() {
      const api = yield* HttpApi.Api
      const page = yield* Effect.cached(
        Effect.flatMap(
          Effect.promise(() => import("@effect/platform/HttpApiScalar")),
          (HttpApiScalar) =>
            HttpApiBuilder.Router.router.pipe(
              Effect.provide(
                HttpApiScalar.layer({ path }).pipe(
                  Layer.provideMerge(HttpApiBuilder.Router.Live),
                  Layer.provide(Layer.succeed(HttpApi.Api, api))
                )
              )
            )
        )
      )
      yield* router.get(path, Effect.flatten(page))
    })
  )

/**
 * The HTTP application: the contract's handlers, `/openapi.json`, `/docs`,
 * wrapped by the gateway middleware. The contract and its handlers are passed
 * in (src/Gateway.ts composes them), so this module names no feature.
 */
export const httpApp = <E, R>(
  api: HttpApi.HttpApi.Any,
  handlers: Layer.Layer<HttpApi.Api, E, R>,
  /** The routes the handlers mount beside the contract (`GET /metrics`), for the metrics' route label. */
  plainRoutes: ReadonlyArray<string> = []
) =>
  HttpApiBuilder.serve().pipe(
    // Inside the app, so that errors become spec bodies before the server writes anything.
    Layer.provide(HttpApiBuilder.middleware(gatewayMiddleware(api, plainRoutes))),
    // No limit on a path parameter's length (the router's default is 100): a
    // longer id missed every route and the miss answered 405. The handlers
    // look any id up, after authentication, and answer their own 404.
    Layer.provide(HttpRouter.setRouterConfig({ maxParamLength: Number.MAX_SAFE_INTEGER })),
    Layer.provide(scalarOnFirstRequest(DOCS_PATH)),
    Layer.provide(HttpApiBuilder.middlewareOpenApi({ path: "/openapi.json" })),
    Layer.provide(handlers),
    // The router's default refuses a path parameter over 100 characters as no route at all, which the
    // middleware reports as 405; an over-long id should reach its handler and be an unknown id (404).
    // The server's limit on the request line still bounds it.
    Layer.locally(HttpRouter.currentRouterConfig, { maxParamLength: Number.MAX_SAFE_INTEGER })
  )
