// Runs on PostgreSQL only: two processes share one database, which the embedded PGlite cannot (vitest.config.ts).
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createAccount, operator } from "../support/adminApi.ts"
import { api } from "../support/api.ts"
import { createDatabase } from "../support/database.ts"
import { ADMIN_TOKEN, freePort } from "../support/gateway.ts"
import { METRICS_TOKEN, type Sample, samplesOf, valueOf } from "../support/metrics.ts"
import { metricsText } from "../support/opsApi.ts"
import { type Service, start, stop, waitForHealth } from "../support/process.ts"
import { videoRequest } from "../support/tasks.ts"

/** The gauges read from the database: every replica must answer the same (the ages move with the clock). */
const DATABASE_GAUGES = [
  "mtg_tasks",
  "mtg_channel_in_flight",
  "mtg_channel_concurrency",
  "mtg_channel_state",
  "mtg_webhook_events_pending",
  "mtg_webhook_backlog"
]

const gaugesOf = (samples: ReadonlyArray<Sample>) =>
  samples.filter((s) => DATABASE_GAUGES.includes(s.name)).map((s) => JSON.stringify(s)).sort()

describe("metrics of two replicas on one PostgreSQL", () => {
  const services: Array<Service> = []
  const dirs: Array<string> = []
  let drop: () => Promise<void> = async () => {}
  beforeAll(async () => {
    const db = await createDatabase("postgresql")
    drop = db.drop
    for (let i = 0; i < 2; i++) {
      const dir = mkdtempSync(join(tmpdir(), "gw-metrics-"))
      dirs.push(dir)
      const service = start({
        DATA_DIR: dir,
        DATABASE_URL: db.url!,
        ADMIN_TOKEN,
        METRICS_TOKEN,
        ENCRYPTION_KEY: "metrics-replicas-encryption-key-0123",
        ROLE: "api"
      }, await freePort())
      services.push(service)
      if (!(await waitForHealth(service, 60_000))) throw new Error(`replica ${i} did not start:\n${service.output()}`)
    }
  })
  afterAll(async () => {
    for (const service of services) await stop(service)
    await drop()
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
  })

  it("answer the database's gauges alike, while counters stay per process", async () => {
    const [a, b] = services.map((s) => ({ url: `http://127.0.0.1:${s.port}` }))
    const acct = await createAccount(a!, { name: "replicas", wallet_credits: 10 })
    for (let i = 0; i < 3; i++) {
      const created = await api(a!, acct).createVideoReply(videoRequest())
      expect(created.status).toBe(202)
    }
    const [onA, onB] = await Promise.all(
      [a!, b!].map(async (gw) => samplesOf((await metricsText(gw, METRICS_TOKEN)).body))
    )
    expect(valueOf(onA!, "mtg_tasks", { state: "available", channel: "sandbox" })).toBe(3)
    expect(gaugesOf(onB!)).toEqual(gaugesOf(onA!))
    expect(gaugesOf(onA!).length).toBeGreaterThanOrEqual(DATABASE_GAUGES.length)
    // The oldest queued task's age: the same task seen from both, a scrape apart.
    const age = { state: "available", channel: "sandbox" }
    expect(Math.abs(
      valueOf(onA!, "mtg_tasks_oldest_due_age_seconds", age)! - valueOf(onB!, "mtg_tasks_oldest_due_age_seconds", age)!
    )).toBeLessThan(5)
    // Counters are the process's own: the creates went to A; B's counter is at its start, zero.
    expect(valueOf(onA!, "mtg_tasks_created_total", { model: "provy-famS-2.0-480p" })).toBe(3)
    expect(valueOf(onB!, "mtg_tasks_created_total", { model: "provy-famS-2.0-480p" })).toBe(0)
  })

  it("show a drain set through one replica in the other's very next scrape", async () => {
    const [a, b] = services.map((s) => ({ url: `http://127.0.0.1:${s.port}` }))
    expect((await operator(a!).setChannelState("sandbox", "drain", "replicas")).state).toBe("draining")
    // Read from the table at the scrape, not from B's copy of the states: no wait for its next read.
    const onB = samplesOf((await metricsText(b!, METRICS_TOKEN)).body)
    expect(valueOf(onB, "mtg_channel_state", { channel: "sandbox", state: "draining" })).toBe(1)
    expect(valueOf(onB, "mtg_channel_state", { channel: "sandbox", state: "enabled" })).toBe(0)
    expect((await operator(a!).setChannelState("sandbox", "enable")).state).toBe("enabled")
  })
})
