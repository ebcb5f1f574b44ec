import { Config, Effect, Layer, Option } from "effect"

/**
 * OTLP/HTTP trace export when `OTEL_EXPORTER_OTLP_ENDPOINT` is set; otherwise
 * spans stay in-process. The OpenTelemetry SDK and exporter are loaded only
 * when an endpoint is set, so a service without one never pays for them.
 */
export const TracingLive = Layer.unwrapEffect(
  Effect.gen(function*() {
    const endpoint = yield* Config.option(Config.string("OTEL_EXPORTER_OTLP_ENDPOINT"))
    const serviceName = yield* Config.withDefault(Config.string("OTEL_SERVICE_NAME"), "media-task-gateway")
    if (Option.isNone(endpoint)) return Layer.empty
    const [NodeSdk, { OTLPTraceExporter }, { BatchSpanProcessor }] = yield* Effect.promise(() =>
      Promise.all([
        import("@effect/opentelemetry/NodeSdk"),
        import("@opentelemetry/exporter-trace-otlp-http"),
        import("@opentelemetry/sdk-trace-base")
      ])
    )
    return NodeSdk.layer(() => ({
      resource: { serviceName },
      spanProcessor: new BatchSpanProcessor(
        new OTLPTraceExporter({ url: `${endpoint.value.replace(/\/+$/, "")}/v1/traces` })
      )
    }))
  })
)
