import * as NodeSdk from "@effect/opentelemetry/NodeSdk"
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http"
import { BatchSpanProcessor } from "@opentelemetry/sdk-trace-base"
import { Config, Effect, Layer, Option } from "effect"

/** OTLP/HTTP trace export when `OTEL_EXPORTER_OTLP_ENDPOINT` is set; otherwise spans stay in-process. */
export const TracingLive = Layer.unwrapEffect(
  Effect.gen(function*() {
    const endpoint = yield* Config.option(Config.string("OTEL_EXPORTER_OTLP_ENDPOINT"))
    const serviceName = yield* Config.withDefault(Config.string("OTEL_SERVICE_NAME"), "media-task-gateway")
    if (Option.isNone(endpoint)) return Layer.empty
    return NodeSdk.layer(() => ({
      resource: { serviceName },
      spanProcessor: new BatchSpanProcessor(
        new OTLPTraceExporter({ url: `${endpoint.value.replace(/\/+$/, "")}/v1/traces` })
      )
    }))
  })
)
