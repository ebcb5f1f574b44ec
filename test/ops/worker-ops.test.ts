// Runs on PostgreSQL only: an API process and a worker process share one database, which the embedded PGlite cannot (vitest.config.ts).
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createAccount } from "../support/adminApi.ts"
import { configWith } from "../support/config.ts"
import { expectError, raw } from "../support/http.ts"
import { type Installation, installation } from "../support/installation.ts"
import { METRICS_TOKEN, promtool, samplesOf, valueOf } from "../support/metrics.ts"
import { metricsText } from "../support/opsApi.ts"
import { type Service, stop } from "../support/process.ts"
import { createVideoTask, untilStatuses } from "../support/taskRuns.ts"
import { videoRequest } from "../support/tasks.ts"
import type { Target } from "../support/wire.ts"

/**
 * A `ROLE=worker` replica with `OPS_PORT` answers liveness, readiness and
 * `/metrics` there, and nothing of the API: its counters are the tasks it
 * ended, which no API replica can show.
 */

const MODEL = "provy-famS-2.0-480p"
let site: Installation
let worker: { readonly service: Service; readonly ops: Target }
const shown: Array<[string, Service]> = []

beforeAll(async () => {
  site = await installation((service, role) => shown.push([role, service]))
  const dir = configWith("limits.json", (limits) => {
    for (const rate of Object.values(limits.rate_limits) as Array<any>) rate.per_second = rate.burst = 100_000
  })
  const env = { METRICS_TOKEN }
  await site.serve("api", dir, { env })
  worker = await site.worker(dir, { env })
}, 120_000)
afterAll(async (context) => {
  if (context.tasks.some((t) => t.result?.state === "fail")) {
    for (const [role, service] of shown) console.error(`--- ${role} ---\n${service.output().slice(-3000)}`)
  }
  await site?.close()
})

describe("a worker replica's operations port", { timeout: 120_000 }, () => {
  it("answers /healthz and /readyz, and /metrics with the tasks the worker ended; nothing of the API", async () => {
    for (const path of ["/healthz", "/readyz"]) {
      const reply = await raw(worker.ops, "GET", path)
      expect(reply.status, path).toBe(200)
      expect(reply.body, path).toEqual({ status: "ok" })
    }

    const acct = await createAccount(site.target, { name: "worker ops", wallet_credits: 100 })
    const id = await createVideoTask(site.target, acct.model.key, videoRequest({ model: MODEL }))
    await untilStatuses(site.target, acct.resource.key, [id], (s) => s[0] === "succeeded", 60_000)

    const onWorker = await metricsText(worker.ops, METRICS_TOKEN)
    expect(promtool(["check", "metrics"], onWorker.body).status).toBe(0)
    const workerSamples = samplesOf(onWorker.body)
    const apiSamples = samplesOf((await metricsText(site.target, METRICS_TOKEN)).body)
    const finished = { kind: "video", model: MODEL, status: "succeeded" }
    // The worker ended the task and the API replica created it: each counts only its own.
    expect(valueOf(workerSamples, "mtg_tasks_finished_total", finished)).toBe(1)
    expect(valueOf(apiSamples, "mtg_tasks_finished_total", finished) ?? 0).toBe(0)
    expect(valueOf(apiSamples, "mtg_tasks_created_total", { model: MODEL })).toBe(1)
    expect(valueOf(workerSamples, "mtg_tasks_created_total", { model: MODEL }) ?? 0).toBe(0)
    // The database's gauges answer alike on every replica, the worker's too.
    expect(valueOf(workerSamples, "mtg_channel_state", { channel: "sandbox", state: "enabled" })).toBe(1)

    // The same token rule as an API replica's /metrics; the API itself is not served here.
    expectError(await raw(worker.ops, "GET", "/metrics"), 401, "invalid_api_key", "authentication_error")
    expect((await raw(worker.ops, "GET", "/v1/models", { key: acct.resource.key })).status).toBe(404)
    expect((await raw(worker.ops, "POST", "/v1/video/tasks", { key: acct.model.key, json: videoRequest() })).status)
      .toBe(404)
  })

  it("stops on SIGTERM with its port, exit 0", async () => {
    await stop(worker.service)
    expect(await worker.service.exited).toBe(0)
    await expect(fetch(`${worker.ops.url}/healthz`)).rejects.toThrow()
  })
})
