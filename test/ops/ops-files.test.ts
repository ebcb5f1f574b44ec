import { readFileSync } from "node:fs"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type FakeGatewayEnv, runTask, startFakeGatewayEnv, videoTask } from "../support/fakeGateway.ts"
import { METRICS_TOKEN, promtool, scrape } from "../support/metrics.ts"

const ALERTS = "ops/prometheus/alerts.yml"
const DASHBOARD = "ops/grafana/gateway.json"

/** Every `mtg_` name a file mentions (its expressions, and its descriptions too). */
const namesIn = (text: string) => new Set(text.match(/\bmtg_[a-z0-9_]+/g) ?? [])

/**
 * The sample names an exposition can carry: each family's own name from its
 * `# TYPE` line, plus a histogram's `_bucket`, `_count` and `_sum`.
 */
const exposedNames = (text: string) =>
  new Set(
    [...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].flatMap(([, name, type]) =>
      type === "histogram" ? [name!, `${name}_bucket`, `${name}_count`, `${name}_sum`] : [name!]
    )
  )

describe("the alert rules and the dashboard", () => {
  // A gateway that ran one task through an upstream (polled more than once, on a channel with a request budget),
  // so its histograms and the budget's gauges have series too.
  let env: FakeGatewayEnv
  beforeAll(async () => {
    env = await startFakeGatewayEnv({ METRICS_TOKEN }, { requests_per_second: 50 })
    env.fake.lives.push({ prompt: "the rules' metrics", statuses: ["in_progress", "succeeded"] })
    expect((await runTask(env, videoTask("the rules' metrics"))).task.status).toBe("succeeded")
  })
  afterAll(() => env.close())

  it("the rules pass promtool check rules, and their unit tests (alerts.test.yml) pass", () => {
    const checked = promtool(["check", "rules", ALERTS])
    expect(checked.output).toContain("SUCCESS: 6 rules found")
    expect(checked.status).toBe(0)
    const tested = promtool(["test", "rules", "ops/prometheus/alerts.test.yml"])
    expect(tested.output).toContain("SUCCESS")
    expect(tested.status).toBe(0)
  })

  it("name only metrics the gateway exposes", async () => {
    const exposed = exposedNames((await scrape(env.gw, METRICS_TOKEN)).body as string)
    for (const file of [ALERTS, DASHBOARD]) {
      const named = [...namesIn(readFileSync(file, "utf8"))]
      expect(named.length).toBeGreaterThan(4)
      expect(named.filter((name) => !exposed.has(name)), file).toEqual([])
    }
  })

  it("cover what an operator is warned of: a replica down, a failing channel, queue age, webhook backlog, breaker, refunds", () => {
    const alerts = readFileSync(ALERTS, "utf8")
    expect(alerts).toContain("up{job=~\"media-task-gateway.*\"} == 0")
    for (
      const name of [
        "mtg_upstream_requests_total",
        "mtg_tasks_oldest_due_age_seconds",
        "mtg_webhook_backlog_oldest_age_seconds",
        "mtg_breaker_open",
        "mtg_credits_refunded_total"
      ]
    ) {
      expect(alerts).toContain(name)
    }
    const dashboard = JSON.parse(readFileSync(DASHBOARD, "utf8"))
    expect(dashboard.panels.length).toBeGreaterThanOrEqual(10)
  })
})
