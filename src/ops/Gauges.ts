import { SqlClient } from "@effect/sql"
import { Clock, Effect, Runtime } from "effect"
import { Registry } from "../catalog/Registry.ts"
import { Channels } from "../channel/Channels.ts"
import { ChannelStateName } from "../channel/ChannelState.ts"
import { storedChannelStates } from "../channel/ChannelStates.ts"
import type { GaugeReading } from "../platform/metrics/Metrics.ts"
import { Metrics } from "../platform/metrics/Metrics.ts"
import { Breakers } from "../tasks/engine/Breakers.ts"
import { engineGauges } from "../tasks/engine/sql/engineGauges.ts"
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
  { name: "mtg_breaker_open", help: "1 when a channel's circuit breaker is open in this process, else 0" }
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
  const run = Runtime.runPromise(yield* Effect.runtime<never>())

  const read = Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    const [states, backlog, open, operatorStates] = yield* Effect.all(
      [engineGauges(sql, now), webhookBacklog(sql, now), breakers.opened, storedChannelStates(sql)],
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
    readings.push(
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
  metrics.prepare([
    ...registry.videoModels.map((m) => ({ kind: "video", model: m.capability.id })),
    ...registry.imageModels.map((m) => ({ kind: "image", model: m.capability.id }))
  ])
})
