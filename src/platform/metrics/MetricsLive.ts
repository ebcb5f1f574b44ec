import type { Attributes, ObservableGauge } from "@opentelemetry/api"
import { PrometheusExporter, PrometheusSerializer } from "@opentelemetry/exporter-prometheus"
import { MeterProvider } from "@opentelemetry/sdk-metrics"
import { Effect, Layer } from "effect"
import { MetricReaders, Metrics, type MetricsService } from "./Metrics.ts"
import { OPENMETRICS_CONTENT_TYPE, toOpenMetrics } from "./OpenMetrics.ts"

const PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

/** Seconds: from a fast read (under a millisecond) to a slow upload. */
const HTTP_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]
/** Seconds: an upstream call, from a quick poll to a long synchronous image generation. */
const UPSTREAM_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120]
/**
 * Seconds: between two polls of one task, from a batching upstream's 1 s to the gap a request budget
 * stretches to when many tasks wait.
 */
const POLL_GAP_BUCKETS = [0.5, 1, 2, 3, 5, 10, 15, 30, 60, 120, 300, 600, 1800]
/** Seconds: a task from creation to its end, from an instant image to a video that took an hour. */
const TASK_BUCKETS = [1, 5, 10, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200]

/**
 * The instruments on OpenTelemetry's metrics SDK. One meter provider per
 * service instance (not the global one), read by the Prometheus exporter's
 * reader at every scrape (its server is never started: `/metrics` is a route
 * of the service) and by any further reader the runtime provides (OTLP).
 */
export const MetricsLive = Layer.scoped(
  Metrics,
  Effect.gen(function*() {
    const scrape = new PrometheusExporter({ preventServerStart: true })
    const readers = yield* MetricReaders
    const provider = new MeterProvider({ readers: [scrape, ...readers] })
    yield* Effect.addFinalizer(() => Effect.promise(() => provider.shutdown().catch(() => undefined)))
    const meter = provider.getMeter("media-task-gateway")
    const serializer = new PrometheusSerializer(undefined, false, undefined, true, true)

    const tasksCreated = meter.createCounter("mtg_tasks_created", {
      description: "Tasks created (replays of an Idempotency-Key not counted)"
    })
    const tasksFinished = meter.createCounter("mtg_tasks_finished", {
      description: "Tasks that reached a terminal state, by status and failure code"
    })
    const taskSeconds = meter.createHistogram("mtg_task_duration_seconds", {
      description: "Time from a task's creation to its terminal state",
      advice: { explicitBucketBoundaries: TASK_BUCKETS }
    })
    const charged = meter.createCounter("mtg_credits_charged", { description: "Credits charged at task creation" })
    const refunded = meter.createCounter("mtg_credits_refunded", { description: "Credits refunded with failed tasks" })
    const upstream = meter.createCounter("mtg_upstream_requests", {
      description: "Calls of a channel's upstream, by operation and outcome"
    })
    const upstreamSeconds = meter.createHistogram("mtg_upstream_request_duration_seconds", {
      description: "Duration of a call of a channel's upstream",
      advice: { explicitBucketBoundaries: UPSTREAM_BUCKETS }
    })
    const refusals = meter.createCounter("mtg_account_limit_refusals", {
      description: "Creates refused for an account limit of its group (max_queued), by group and limit"
    })
    const deprecated = meter.createCounter("mtg_deprecated_model_creates", {
      description: "Tasks created with a deprecated model before its sunset, by kind and model"
    })
    const pollGap = meter.createHistogram("mtg_upstream_poll_gap_seconds", {
      description: "Time between two polls of one task on a channel",
      advice: { explicitBucketBoundaries: POLL_GAP_BUCKETS }
    })
    const webhooks = meter.createCounter("mtg_webhook_deliveries", {
      description: "Webhook delivery attempts, by outcome"
    })
    const watchReads = meter.createCounter("mtg_task_watch_reads", {
      description: "Task rows read by this process's watchers of tasks, by reason"
    })
    const http = meter.createCounter("mtg_http_requests", {
      description: "HTTP requests, by method, route template and status"
    })
    const httpSeconds = meter.createHistogram("mtg_http_request_duration_seconds", {
      description: "HTTP request duration, by method and route template",
      advice: { explicitBucketBoundaries: HTTP_BUCKETS }
    })

    const sweptObjects = meter.createCounter("mtg_results_swept_objects", {
      description: "Result files removed past their group's retention, by group"
    })
    const sweptBytes = meter.createCounter("mtg_results_swept_bytes", {
      description: "Bytes of the result files removed past their group's retention, by group"
    })
    const redacted = meter.createCounter("mtg_requests_redacted", {
      description: "Ended tasks whose prompt, references and metadata were redacted, by group"
    })
    const upstreamCost = meter.createCounter("mtg_upstream_cost", {
      description: "What providers bill for attempts, in the operator's money (routes that declare a cost)"
    })

    const service: MetricsService = {
      taskCreated: (kind, model, chargedMicros) => {
        const labels = { kind, model }
        tasksCreated.add(1, labels)
        if (chargedMicros > 0) charged.add(chargedMicros / 1_000_000, labels)
      },
      taskFinished: (task) => {
        const labels: Attributes = { kind: task.kind, model: task.model, status: task.status }
        if (task.code !== undefined) labels.code = task.code
        tasksFinished.add(1, labels)
        taskSeconds.record(task.seconds, { kind: task.kind, model: task.model, channel: task.channel })
        if (task.refundedMicros > 0) {
          refunded.add(task.refundedMicros / 1_000_000, { kind: task.kind, model: task.model })
        }
      },
      upstreamRequest: (channel, operation, outcome, seconds) => {
        upstream.add(1, { channel, operation, outcome })
        upstreamSeconds.record(seconds, { channel, operation })
      },
      limitRefused: (group, limit) => refusals.add(1, { group, limit }),
      deprecatedCreate: (kind, model) => deprecated.add(1, { kind, model }),
      pollGap: (channel, seconds) => pollGap.record(seconds, { channel }),
      webhookDelivery: (outcome) => webhooks.add(1, { outcome }),
      taskWatchReads: (reason, tasks) => watchReads.add(tasks, { reason }),
      httpRequest: (method, route, status, seconds) => {
        http.add(1, { method, route, status: String(status) })
        httpSeconds.record(seconds, { method, route })
      },
      resultsSwept: (group, objects, bytes) => {
        sweptObjects.add(objects, { group })
        sweptBytes.add(bytes, { group })
      },
      requestsRedacted: (group, tasks) => redacted.add(tasks, { group }),
      prepare: (models, groups = [], upstreams = []) => {
        for (const group of groups) {
          refusals.add(0, { group, limit: "max_queued" })
          sweptObjects.add(0, { group })
          sweptBytes.add(0, { group })
          redacted.add(0, { group })
        }
        for (const { channel, operations } of upstreams) {
          for (const operation of operations) upstream.add(0, { channel, operation, outcome: "ok" })
        }
        for (const labels of models) {
          tasksCreated.add(0, labels)
          tasksFinished.add(0, { ...labels, status: "succeeded" })
          charged.add(0, labels)
          refunded.add(0, labels)
        }
        for (const outcome of ["delivered", "retry", "failed"]) webhooks.add(0, { outcome })
        for (const reason of ["opened", "changed", "periodic"]) watchReads.add(0, { reason })
      },
      upstreamCost: (channel, model, micros) => upstreamCost.add(micros / 1_000_000, { channel, model }),
      prepareUpstreamCost: (routes) => {
        for (const { channel, model } of routes) upstreamCost.add(0, { channel, model })
      },
      observe: (set) => {
        const gauges = new Map<string, ObservableGauge>(
          set.gauges.map(({ help, name }) => [name, meter.createObservableGauge(name, { description: help })])
        )
        meter.addBatchObservableCallback(async (result) => {
          for (const reading of await set.read()) {
            const gauge = gauges.get(reading.name)
            if (gauge !== undefined) result.observe(gauge, reading.value, reading.labels)
          }
        }, [...gauges.values()])
      },
      expose: (format) =>
        Effect.promise(() => scrape.collect()).pipe(
          Effect.tap(({ errors }) =>
            errors.length === 0 ? Effect.void : Effect.logWarning("collecting metrics met errors", errors.map(String))
          ),
          Effect.map(({ resourceMetrics }) =>
            format === "openmetrics"
              ? { contentType: OPENMETRICS_CONTENT_TYPE, body: toOpenMetrics(resourceMetrics) }
              : { contentType: PROMETHEUS_CONTENT_TYPE, body: serializer.serialize(resourceMetrics) }
          )
        )
    }
    return service
  })
)
