import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type FakeGatewayEnv, runTask, startFakeGatewayEnv, VIDEO, videoTask } from "../support/fakeGateway.ts"
import { METRICS_TOKEN, samplesOf, scrape, valueOf } from "../support/metrics.ts"
import { type Prometheus, startPrometheus } from "../support/prometheus.ts"
import { eventually } from "../support/receiver.ts"

describe("a real Prometheus scraping the gateway", () => {
  let env: FakeGatewayEnv
  let prometheus: Prometheus
  beforeAll(async () => {
    env = await startFakeGatewayEnv({ METRICS_TOKEN })
    prometheus = await startPrometheus(new URL(env.gw.url).host, METRICS_TOKEN)
  })
  afterAll(async () => {
    await prometheus?.close()
    await env?.close()
  })

  it("scrapes with the bearer token and answers a query of the counters a task moved", async () => {
    const { task } = await runTask(env, videoTask("metrics through prometheus"))
    expect(task.status).toBe("succeeded")

    // The engine's side, straight from the scrape: one submit and polls on the channel, the task's end and time.
    const samples = samplesOf((await scrape(env.gw, METRICS_TOKEN)).body)
    expect(valueOf(samples, "mtg_upstream_requests_total", { channel: "upgw", operation: "submit", outcome: "ok" }))
      .toBe(1)
    expect(valueOf(samples, "mtg_upstream_requests_total", { channel: "upgw", operation: "poll", outcome: "ok" }))
      .toBeGreaterThanOrEqual(1)
    expect(valueOf(samples, "mtg_upstream_request_duration_seconds_count", { channel: "upgw", operation: "submit" }))
      .toBe(1)
    expect(valueOf(samples, "mtg_tasks_finished_total", { kind: "video", model: VIDEO, status: "succeeded" })).toBe(1)
    expect(valueOf(samples, "mtg_task_duration_seconds_count", { kind: "video", model: VIDEO, channel: "upgw" }))
      .toBe(1)

    // Prometheus scraped it (OpenMetrics, which it asks for first) and answers the query.
    const created = await eventually(async () => {
      const [series] = await prometheus.query(`sum(mtg_tasks_created_total{model="${VIDEO}"})`)
      return series?.value === 1 ? series : undefined
    }, "Prometheus answering mtg_tasks_created_total = 1")
    expect(created.value).toBe(1)
    const finished = await eventually(async () => {
      const [series] = await prometheus.query(`mtg_tasks_finished_total{status="succeeded",model="${VIDEO}"}`)
      return series?.value === 1 ? series : undefined
    }, "Prometheus answering mtg_tasks_finished_total")
    expect(finished.metric).toMatchObject({ job: "gateway", kind: "video", model: VIDEO, status: "succeeded" })
    const [target] = await prometheus.targets()
    expect(target).toMatchObject({ health: "up", lastError: "" })
    // A family named as OpenMetrics names it (without `_total`; from Prometheus text it would be
    // `mtg_tasks_created_total`): Prometheus read the OpenMetrics exposition.
    const metadata = await (await fetch(`${prometheus.url}/api/v1/targets/metadata?metric=mtg_tasks_created`)).json()
    expect(metadata.data).toEqual([expect.objectContaining({ type: "counter" })])
  })
})
