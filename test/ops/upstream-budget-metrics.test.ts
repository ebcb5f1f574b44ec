import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type FakeGatewayEnv, runTask, startFakeGatewayEnv, videoTask } from "../support/fakeGateway.ts"
import { METRICS_TOKEN, promtool, samplesOf, valueOf } from "../support/metrics.ts"
import { metricsText } from "../support/opsApi.ts"

/**
 * The figures of a channel's upstream request budget (docs/metrics.md): the
 * budget as configured and the rate every replica paces it at now (read from
 * the database, lowered by a 429 and climbing back), beside the requests
 * `mtg_upstream_requests_total` already counts, and the gap between two polls
 * of one task. A gateway whose channels to a fake upstream gateway have a
 * budget of 50 requests a second.
 */

const BUDGET = 50

describe("the upstream request budget's metrics", () => {
  let env: FakeGatewayEnv
  beforeAll(async () => {
    env = await startFakeGatewayEnv({ METRICS_TOKEN }, { requests_per_second: BUDGET })
  })
  afterAll(() => env.close())

  const scrape = async () => {
    const reply = await metricsText(env.gw, METRICS_TOKEN)
    return { text: reply.body, samples: samplesOf(reply.body) }
  }

  it("a configured upstream channel's request counters exist at zero before its first call", async () => {
    const { samples } = await scrape()
    // upgw-short has run nothing yet: its operations are there, at 0; the sandbox calls no upstream.
    for (const operation of ["submit", "poll", "fetch_result", "find", "cancel"]) {
      expect(valueOf(samples, "mtg_upstream_requests_total", { channel: "upgw-short", operation, outcome: "ok" }))
        .toBe(0)
    }
    expect(samples.some((s) => s.name === "mtg_upstream_requests_total" && s.labels.channel === "sandbox"))
      .toBe(false)
  })

  it("the budget and the rate per channel, the poll gap histogram, in text promtool accepts", async () => {
    env.fake.lives.push({ prompt: "paced, polled thrice", statuses: ["in_progress", "in_progress", "succeeded"] })
    const { polls, task } = await runTask(env, videoTask("paced, polled thrice"))
    expect(task.status).toBe("succeeded")
    expect(polls.length).toBeGreaterThanOrEqual(3)

    const { samples, text } = await scrape()
    for (const channel of ["upgw", "upgw-short"]) {
      expect(valueOf(samples, "mtg_upstream_budget_requests_per_second", { channel })).toBe(BUDGET)
      // Nothing throttled yet: the whole budget (a channel no replica has paced yet has no row, and the same rate).
      expect(valueOf(samples, "mtg_upstream_rate_requests_per_second", { channel })).toBe(BUDGET)
    }
    // A channel without a budget has neither gauge.
    expect(valueOf(samples, "mtg_upstream_budget_requests_per_second", { channel: "sandbox" })).toBeUndefined()
    // Two gaps at least between the task's three polls, every one of them counted as a request.
    expect(valueOf(samples, "mtg_upstream_poll_gap_seconds_count", { channel: "upgw" })).toBeGreaterThanOrEqual(2)
    expect(valueOf(samples, "mtg_upstream_poll_gap_seconds_bucket", { channel: "upgw", le: "+Inf" }))
      .toBeGreaterThanOrEqual(2)
    expect(valueOf(samples, "mtg_upstream_requests_total", { channel: "upgw", operation: "poll", outcome: "ok" }))
      .toBeGreaterThanOrEqual(3)
    const checked = promtool(["check", "metrics"], text)
    expect(checked.output).toBe("")
    expect(checked.status).toBe(0)
  })

  it("a 429 lowers the channel's rate for every replica: the gauge reads it from the database", async () => {
    env.fake.lives.push({ prompt: "throttled once", statuses: ["in_progress", "succeeded"] })
    env.fake.faults.query.push({ kind: "rate_limited", retryAfter: "1" })
    const { task } = await runTask(env, videoTask("throttled once"))
    expect(task.status).toBe("succeeded")
    const { samples } = await scrape()
    const rate = valueOf(samples, "mtg_upstream_rate_requests_per_second", { channel: "upgw" })!
    // Halved, and climbing back by a share of the budget a second since.
    expect(rate).toBeGreaterThanOrEqual(BUDGET / 2)
    expect(rate).toBeLessThan(BUDGET)
    expect(valueOf(samples, "mtg_upstream_rate_requests_per_second", { channel: "upgw-short" })).toBe(BUDGET)
    // The 429 itself, counted as the upstream not taking the request.
    expect(valueOf(samples, "mtg_upstream_requests_total", { channel: "upgw", operation: "poll", outcome: "refused" }))
      .toBe(1)
  })
})
