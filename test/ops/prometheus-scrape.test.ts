import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createAccount, operator } from "../support/adminApi.ts"
import { eventually } from "../support/eventually.ts"
import { type FakeGatewayEnv, runTask, startFakeGatewayEnv, VIDEO, videoTask } from "../support/fakeGateway.ts"
import { METRICS_TOKEN, samplesOf, valueOf } from "../support/metrics.ts"
import { metricsText, replyOf } from "../support/opsApi.ts"
import { type Prometheus, startPrometheus } from "../support/prometheus.ts"
import { startReceiver } from "../support/receiver.ts"

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
    const samples = samplesOf((await metricsText(env.gw, METRICS_TOKEN)).body)
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

  it("counts webhook attempts by outcome and reads the outbox's backlog", async () => {
    const receiver = await startReceiver(() => 200)
    const failing = await startReceiver(() => 500)
    try {
      const counts = async () => {
        const samples = samplesOf((await metricsText(env.gw, METRICS_TOKEN)).body)
        return {
          delivered: valueOf(samples, "mtg_webhook_deliveries_total", { outcome: "delivered" }) ?? 0,
          retry: valueOf(samples, "mtg_webhook_deliveries_total", { outcome: "retry" }) ?? 0,
          pending: valueOf(samples, "mtg_webhook_events_pending"),
          due: valueOf(samples, "mtg_webhook_backlog")
        }
      }
      const before = await counts()
      for (const url of [receiver.url, failing.url]) {
        const acct = await createAccount(env.gw, { name: "hooked" })
        const path = { id: acct.id }
        const set = await replyOf(
          operator(env.gw).call((c) => c.adminWebhooks.setWebhook({ path, payload: { url }, withResponse: true }))
        )
        expect(set.status).toBe(200)
        const sent = await replyOf(
          operator(env.gw).call((c) => c.adminWebhooks.testWebhook({ path, withResponse: true }))
        )
        expect(sent.status).toBe(202)
      }
      // One delivered; one refused with 500, to be tried again in WEBHOOK_RETRY_INTERVAL_S (30 s): pending, not due.
      const after = await eventually(async () => {
        const now = await counts()
        return now.delivered === before.delivered + 1 && now.retry === before.retry + 1 ? now : undefined
      }, "one webhook delivered and one to retry")
      expect(after.pending).toBe((before.pending ?? 0) + 1)
      expect(after.due).toBe(0)
    } finally {
      await receiver.close()
      await failing.close()
    }
  })
})
