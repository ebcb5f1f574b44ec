import { SqlClient } from "@effect/sql"
import { Clock, Effect, Runtime } from "effect"
import { Registry } from "../catalog/Registry.ts"
import { Channels } from "../channel/Channels.ts"
import { ChannelStateName } from "../channel/ChannelState.ts"
import { storedChannelStates } from "../channel/ChannelStates.ts"
import { TaskKind } from "../channel/contract/Adapter.ts"
import { isAsyncRunner } from "../channel/contract/Upstream.ts"
import { budgetOf } from "../channel/Pacing.ts"
import { budgetFactors } from "../channel/sql/budgetFactors.ts"
import { AppConfig } from "../platform/AppConfig.ts"
import type { GaugeReading } from "../platform/metrics/Metrics.ts"
import { Metrics } from "../platform/metrics/Metrics.ts"
import { Breakers } from "../tasks/engine/Breakers.ts"
import { engineGauges } from "../tasks/engine/sql/engineGauges.ts"
import { laneGauges } from "../tasks/engine/sql/laneGauges.ts"
import { webhookBacklog } from "../webhooks/Backlog.ts"

/** The engine's states of a task not done (docs/engine.md), and those in which a task can be due for work. */
const STATES = ["available", "running", "waiting", "polling", "storing"]
const DUE_STATES = ["available", "waiting"]

const GAUGES = [
  { name: "mtg_tasks", help: "Tasks not done, by engine state and channel (from the database)" },
  {
    name: "mtg_tasks_oldest_due_age_seconds",
    help:
      "Age of the oldest task due for work per channel: queued (state available) or past its next poll (state waiting)"
  },
  { name: "mtg_channel_in_flight", help: "Tasks a channel has in flight (running here or upstream), across replicas" },
  { name: "mtg_channel_concurrency", help: "A channel's configured concurrency (its in-flight cap)" },
  { name: "mtg_webhook_events_pending", help: "Webhook events not yet delivered or given up" },
  { name: "mtg_webhook_backlog", help: "Webhook events due for delivery now" },
  { name: "mtg_webhook_backlog_oldest_age_seconds", help: "How long the oldest webhook event due now has waited" },
  {
    name: "mtg_channel_state",
    help: "1 for a channel's operator state (enabled, draining, disabled), 0 for the others (from the database)"
  },
  { name: "mtg_breaker_open", help: "1 when a channel's circuit breaker is open in this process, else 0" },
  { name: "mtg_group_tasks_queued", help: "Tasks queued by the accounts of a group, over every channel" },
  { name: "mtg_group_tasks_in_flight", help: "Tasks in flight on a channel for the accounts of a group" },
  { name: "mtg_group_max_queued", help: "A group's max_queued: the most tasks one of its accounts may queue" },
  {
    name: "mtg_group_max_in_flight_per_channel",
    help: "A group's max_in_flight_per_channel: the most tasks one of its accounts may have in flight on a channel"
  },
  { name: "mtg_results_kept_objects", help: "Result files kept in object storage (neither deleted nor expired)" },
  { name: "mtg_results_kept_bytes", help: "Bytes of the result files kept in object storage" },
  {
    name: "mtg_upstream_budget_requests_per_second",
    help: "A channel's configured upstream request budget (requests_per_second), for channels that have one"
  },
  {
    name: "mtg_upstream_rate_requests_per_second",
    help:
      "A channel's upstream request rate now: its budget as lowered by throttling and recovering (from the database)"
  }
]

/**
 * The gauges read when metrics are collected. What lives in the database
 * (queue, in flight, webhook backlog, channel states) is read from it at each collection, so
 * every replica answers the same; the breaker is per process by design
 * (tasks/engine/Breakers.ts) and says so in its help.
 */
export const registerGauges = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const channels = yield* Channels
  const breakers = yield* Breakers
  const metrics = yield* Metrics
  const registry = yield* Registry
  const { groups } = yield* AppConfig
  const run = Runtime.runPromise(yield* Effect.runtime<never>())

  const read = Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    const [states, backlog, open, operatorStates, loads, factors, kept] = yield* Effect.all(
      [
        engineGauges(sql, now),
        webhookBacklog(sql, now),
        breakers.opened,
        storedChannelStates(sql),
        laneGauges(sql),
        budgetFactors(sql),
        // Kept by triggers as results come and go (migration 27): sixteen rows, whatever the number of results.
        sql<{ objects: string; bytes: string }>`
          SELECT coalesce(sum(objects), 0)::text AS objects, coalesce(sum(bytes), 0)::text AS bytes FROM asset_totals`
      ],
      { concurrency: 2 }
    )
    const readings: Array<GaugeReading> = []
    const inFlight = new Map(channels.all.map((c) => [c.name, 0]))
    // Every channel and state has a series, zero when the database has no such task (a graph without gaps).
    const counts = new Map(channels.all.flatMap((c) => STATES.map((state) => [`${c.name}\n${state}`, 0])))
    const ages = new Map(channels.all.flatMap((c) => DUE_STATES.map((state) => [`${c.name}\n${state}`, 0])))
    for (const { channel, count, oldest, state } of states) {
      counts.set(`${channel}\n${state}`, count)
      if (oldest !== null) ages.set(`${channel}\n${state}`, Math.max(0, (now - oldest) / 1000))
      if (state === "running" || state === "waiting" || state === "polling") {
        inFlight.set(channel, (inFlight.get(channel) ?? 0) + count)
      }
    }
    for (const [key, value] of counts) {
      const [channel, state] = key.split("\n") as [string, string]
      readings.push({ name: "mtg_tasks", labels: { state, channel }, value })
    }
    for (const [key, value] of ages) {
      const [channel, state] = key.split("\n") as [string, string]
      readings.push({ name: "mtg_tasks_oldest_due_age_seconds", labels: { state, channel }, value })
    }
    for (const [channel, count] of inFlight) {
      readings.push({ name: "mtg_channel_in_flight", labels: { channel }, value: count })
    }
    for (const { name, settings } of channels.all) {
      readings.push({ name: "mtg_channel_concurrency", labels: { channel: name }, value: settings.concurrency })
      // A channel with a request budget: the budget, and the rate every replica paces it at now (a channel not yet
      // paced by any replica has no row: its whole budget).
      const budget = budgetOf(settings)
      if (budget !== undefined) {
        const labels = { channel: name }
        readings.push({ name: "mtg_upstream_budget_requests_per_second", labels, value: budget.perSecond })
        const value = budget.perSecond * (factors.get(name) ?? 1)
        readings.push({ name: "mtg_upstream_rate_requests_per_second", labels, value })
      }
      readings.push({ name: "mtg_breaker_open", labels: { channel: name }, value: open.includes(name) ? 1 : 0 })
      // Every state has a series (1 for the current one), so a panel or rule can watch any of them.
      const current = operatorStates.get(name)?.state ?? "enabled"
      for (const state of ChannelStateName.literals) {
        readings.push({
          name: "mtg_channel_state",
          labels: { channel: name, state },
          value: state === current ? 1 : 0
        })
      }
    }
    // Every group has a series of its queue, and of its load on every channel, zero when it has none.
    for (const [group, settings] of Object.entries(groups.groups)) {
      const own = loads.filter((l) => l.group === group)
      readings.push({
        name: "mtg_group_tasks_queued",
        labels: { group },
        value: own.reduce((n, l) => n + l.queued, 0)
      })
      for (const { name: channel } of channels.all) {
        const value = own.find((l) => l.channel === channel)?.inFlight ?? 0
        readings.push({ name: "mtg_group_tasks_in_flight", labels: { group, channel }, value })
      }
      if (settings.max_queued !== undefined) {
        readings.push({ name: "mtg_group_max_queued", labels: { group }, value: settings.max_queued })
      }
      if (settings.max_in_flight_per_channel !== undefined) {
        readings.push({
          name: "mtg_group_max_in_flight_per_channel",
          labels: { group },
          value: settings.max_in_flight_per_channel
        })
      }
    }
    readings.push(
      { name: "mtg_results_kept_objects", labels: {}, value: Number(kept[0]?.objects ?? 0) },
      { name: "mtg_results_kept_bytes", labels: {}, value: Number(kept[0]?.bytes ?? 0) },
      { name: "mtg_webhook_events_pending", labels: {}, value: backlog.pending },
      { name: "mtg_webhook_backlog", labels: {}, value: backlog.due },
      {
        name: "mtg_webhook_backlog_oldest_age_seconds",
        labels: {},
        value: backlog.oldestDue === null ? 0 : Math.max(0, (now - backlog.oldestDue) / 1000)
      }
    )
    return readings
  }).pipe(
    // A database away leaves these gauges out of the scrape rather than failing it (the counters still answer).
    Effect.catchAllCause((cause) =>
      Effect.as(Effect.logWarning("the metrics gauges could not be read", cause), [] as ReadonlyArray<GaugeReading>)
    )
  )
  metrics.observe({ gauges: GAUGES, read: () => run(read) })
  // Each channel that calls an upstream, with the operations its adapter makes (the sandbox makes none).
  const upstreams = yield* Effect.forEach(
    channels.all,
    ({ name }) =>
      Effect.map(Effect.orDie(channels.runner(name)), (runner) => {
        const operations = new Set<string>()
        for (const kind of TaskKind.literals) {
          const r = (runner as Partial<Record<TaskKind, unknown>>)[kind]
          if (!isAsyncRunner(r)) continue
          for (const op of ["submit", "poll", "fetch_result"]) operations.add(op)
          if (r.find !== undefined) operations.add("find")
          if (r.cancel !== undefined) operations.add("cancel")
          if (r.forget !== undefined) operations.add("delete")
        }
        return { channel: name, operations: [...operations] }
      })
  )
  metrics.prepare(
    [
      ...registry.videoModels.map((m) => ({ kind: "video", model: m.capability.id })),
      ...registry.imageModels.map((m) => ({ kind: "image", model: m.capability.id }))
    ],
    Object.keys(groups.groups),
    upstreams.filter((u) => u.operations.length > 0)
  )
  metrics.prepareUpstreamCost(
    [...registry.videoModels, ...registry.imageModels].flatMap((m) =>
      m.routes.filter((r) => r.cost !== undefined).map((r) => ({ channel: r.channel, model: m.capability.id }))
    )
  )
})
