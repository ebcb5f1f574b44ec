import type { MetricReader } from "@opentelemetry/sdk-metrics"
import { Context, Effect } from "effect"

/** One value of a gauge read at collection time, with its labels (never ids, keys or prompts). */
export interface GaugeReading {
  readonly name: string
  readonly labels: Readonly<Record<string, string>>
  readonly value: number
}

/** Gauges read together at every collection (a scrape, an OTLP export), from one reader. */
export interface GaugeSet {
  readonly gauges: ReadonlyArray<{ readonly name: string; readonly help: string }>
  /** Every current value; a gauge left out of the answer has no series in this collection. */
  readonly read: () => Promise<ReadonlyArray<GaugeReading>>
}

/** How a finished task is counted: its kind, model and last channel, and why it ended. */
export interface FinishedTask {
  readonly kind: string
  readonly model: string
  readonly channel: string
  readonly status: "succeeded" | "failed"
  /** The task's failure code; absent for a success. */
  readonly code?: string | undefined
  /** From creation to the terminal state. */
  readonly seconds: number
  /** Credits given back with the failure, in micro-credits. */
  readonly refundedMicros: number
}

/** What an exposition answers: its content type and text. */
export interface Exposition {
  readonly contentType: string
  readonly body: string
}

/**
 * The service's instruments, recorded where the events happen (docs/metrics.md
 * lists every metric and its labels). The methods are plain synchronous calls:
 * the HTTP paths record on every request, so a call is an in-memory update and
 * nothing else. Gauges that must read the same on every replica are read from
 * the database when metrics are collected (`observe`), not kept here.
 */
export interface MetricsService {
  readonly taskCreated: (kind: string, model: string, chargedMicros: number) => void
  readonly taskFinished: (task: FinishedTask) => void
  /** One call of a channel's upstream (`submit`, `poll`, `find`, `cancel`, `fetch_result`) and how it ended. */
  readonly upstreamRequest: (channel: string, operation: string, outcome: string, seconds: number) => void
  /** A task created with a deprecated model (before its sunset): who still uses it, counted by model only. */
  readonly deprecatedCreate: (kind: string, model: string) => void
  /** A create refused because the account was at a limit of its group (`max_queued`); by group, never by account. */
  readonly limitRefused: (group: string, limit: "max_queued") => void
  /** The time between two polls of one task on a channel (by whichever replicas sent them). */
  readonly pollGap: (channel: string, seconds: number) => void
  /**
   * One webhook delivery attempt by the event's state after it: `delivered`, `retry` (failed, tried again
   * later), `failed` (failed, no attempt left) or `stale` (its lease was lost; another worker owns the event).
   */
  readonly webhookDelivery: (outcome: string) => void
  /**
   * Task rows read by this process's watchers of tasks (streams, long polls and image requests follow them):
   * `opened` (a first look for someone who began following), `changed` (the task's notification) or
   * `periodic` (the re-read that stands in for a lost notification).
   */
  readonly taskWatchReads: (reason: string, tasks: number) => void
  /** One HTTP request; `route` is the route's template (`/v1/video/tasks/:task_id`), never the path. */
  readonly httpRequest: (method: string, route: string, status: number, seconds: number) => void
  /**
   * Starts at zero the counters whose labels the configuration knows (each served model's creates,
   * successes, charges and refunds; the webhook outcomes), so a rate or a ratio has a series from the
   * start rather than none until the first event.
   */
  readonly prepare: (
    models: ReadonlyArray<{ readonly kind: string; readonly model: string }>,
    /** The account groups, whose limit refusals are counted. */
    groups?: ReadonlyArray<string>,
    /** The channels that call an upstream, and the operations their adapter makes (`ok` starts at zero). */
    upstreams?: ReadonlyArray<{ readonly channel: string; readonly operations: ReadonlyArray<string> }>
  ) => void
  /**
   * The cost of an attempt its provider bills, in micro-units of the operator's money, by the channel and
   * public model it ran for (counted once per attempt, when its cost is recorded).
   */
  readonly upstreamCost: (channel: string, model: string, micros: number) => void
  /** Starts at zero the upstream cost of each route that declares a cost. */
  readonly prepareUpstreamCost: (routes: ReadonlyArray<{ readonly channel: string; readonly model: string }>) => void
  /** Result files removed past their group's retention: how many and their bytes, by group. */
  readonly resultsSwept: (group: string, objects: number, bytes: number) => void
  /** Ended tasks whose request was redacted (a group that minimises data), by group. */
  readonly requestsRedacted: (group: string, tasks: number) => void
  /** Registers gauges read at every collection, for the life of the service. */
  readonly observe: (set: GaugeSet) => void
  /** Every instrument's current values: Prometheus text 0.0.4, or OpenMetrics 1.0.0 when asked. */
  readonly expose: (format: "prometheus" | "openmetrics") => Effect.Effect<Exposition>
}

const ignore = () => undefined

/** Records nothing: what a composition without the service's metrics (a unit test, a tool) uses. */
export const noMetrics: MetricsService = {
  taskCreated: ignore,
  taskFinished: ignore,
  upstreamRequest: ignore,
  limitRefused: ignore,
  deprecatedCreate: ignore,
  pollGap: ignore,
  webhookDelivery: ignore,
  taskWatchReads: ignore,
  httpRequest: ignore,
  prepare: ignore,
  upstreamCost: ignore,
  prepareUpstreamCost: ignore,
  resultsSwept: ignore,
  requestsRedacted: ignore,
  observe: ignore,
  expose: () => Effect.succeed({ contentType: "text/plain; version=0.0.4; charset=utf-8", body: "" })
}

/** The service's instruments; the gateway provides them (MetricsLive.ts), anything else records nothing. */
export class Metrics extends Context.Reference<Metrics>()("Metrics", { defaultValue: () => noMetrics }) {}

/**
 * Further readers of the same instruments, provided by the runtime: the OTLP
 * exporter when `OTEL_EXPORTER_OTLP_ENDPOINT` is set (runtime/node/Tracing.ts).
 * None by default.
 */
export class MetricReaders extends Context.Reference<MetricReaders>()("MetricReaders", {
  defaultValue: (): ReadonlyArray<MetricReader> => []
}) {}
