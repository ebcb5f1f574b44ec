import { HttpApiBuilder, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
import { tokenOf } from "../accounts/Auth.ts"
import { InvalidApiKey } from "../accounts/Errors.ts"
import { Metrics } from "../platform/metrics/Metrics.ts"
import { Secrets } from "../platform/Secrets.ts"

export const METRICS_PATH = "/metrics"

/**
 * `GET /metrics`: every instrument (docs/metrics.md), for Prometheus. Bearer
 * `METRICS_TOKEN` or `ADMIN_TOKEN`, else 401 with the error body of the admin
 * routes. Prometheus text 0.0.4, or OpenMetrics when `Accept` names it (as
 * Prometheus itself does). Not part of the public contract (no OpenAPI
 * entry): operators' scrapers, not callers, use it.
 */
export const MetricsRouteLive = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function*() {
    const metrics = yield* Metrics
    const secrets = yield* Secrets
    yield* router.get(
      METRICS_PATH,
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const token = tokenOf(request.headers.authorization)
        if (token === undefined || !secrets.checkMetricsToken(token)) {
          return yield* new InvalidApiKey({
            message: "Missing or wrong metrics token; send Authorization: Bearer <METRICS_TOKEN> or <ADMIN_TOKEN>."
          })
        }
        const openMetrics = (request.headers.accept ?? "").includes("application/openmetrics-text")
        const { body, contentType } = yield* metrics.expose(openMetrics ? "openmetrics" : "prometheus")
        return HttpServerResponse.text(body, { contentType, headers: { "cache-control": "no-store" } })
      })
    )
  })
)
