import { Config, Effect, Layer, Option } from "effect"
import { MetricReaders } from "../../platform/metrics/Metrics.ts"

/** How often the instruments go out over OTLP (Prometheus scrapes `/metrics` at its own pace). */
const METRICS_EXPORT_MS = 60_000

/**
 * OTLP/HTTP export of traces and metrics when `OTEL_EXPORTER_OTLP_ENDPOINT`
 * is set; otherwise spans stay in-process and metrics are only served at
 * `/metrics`. The OpenTelemetry SDK and exporters are loaded only when an
 * endpoint is set, so a service without one never pays for them. The metrics
 * reader is added to the service's own meter provider (platform/metrics), so
 * OTLP carries the same instruments as `/metrics`.
 */
export const TracingLive = Layer.unwrapEffect(
  Effect.gen(function*() {
    const endpoint = yield* Config.option(Config.string("OTEL_EXPORTER_OTLP_ENDPOINT"))
    const serviceName = yield* Config.withDefault(Config.string("OTEL_SERVICE_NAME"), "media-task-gateway")
    if (Option.isNone(endpoint)) return Layer.empty
    const base = endpoint.value.replace(/\/+$/, "")
    const [
      NodeSdk,
      { OTLPTraceExporter },
      { BatchSpanProcessor },
      { OTLPMetricExporter },
      { PeriodicExportingMetricReader }
    ] = yield* Effect.promise(() =>
      Promise.all([
        import("@effect/opentelemetry/NodeSdk"),
        import("@opentelemetry/exporter-trace-otlp-http"),
        import("@opentelemetry/sdk-trace-base"),
        import("@opentelemetry/exporter-metrics-otlp-http"),
        import("@opentelemetry/sdk-metrics")
      ])
    )
    const metrics = new PeriodicExportingMetricReader({
      exporter: new OTLPMetricExporter({ url: `${base}/v1/metrics` }),
      exportIntervalMillis: METRICS_EXPORT_MS
    })
    return Layer.merge(
      NodeSdk.layer(() => ({
        resource: { serviceName },
        spanProcessor: new BatchSpanProcessor(new OTLPTraceExporter({ url: `${base}/v1/traces` }))
      })),
      Layer.succeed(MetricReaders, [metrics])
    )
  })
)
