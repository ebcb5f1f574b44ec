import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createAccount, operator } from "../support/adminApi.ts"
import { api } from "../support/api.ts"
import { ADMIN_TOKEN, startGateway, type TestGateway } from "../support/gateway.ts"
import { expectError, raw } from "../support/http.ts"
import { METRICS_TOKEN, promtool, samplesOf, scrape, valueOf } from "../support/metrics.ts"
import { metricsText, replyOf } from "../support/opsApi.ts"
import { videoRequest } from "../support/tasks.ts"

describe("GET /metrics", () => {
  let gw: TestGateway
  beforeAll(async () => {
    gw = await startGateway({ METRICS_TOKEN })
  })
  afterAll(() => gw.close())

  it("refuses a missing or wrong token with the admin routes' 401 body", async () => {
    expectError(await raw(gw, "GET", "/metrics"), 401, "invalid_api_key")
    expectError(await scrape(gw, "mtk_wrong_0123456789abcdefghijkl"), 401, "invalid_api_key")
    // A caller's API key is not a metrics token.
    const acct = await createAccount(gw)
    expectError(await scrape(gw, acct.resource.key), 401, "invalid_api_key")
    expectError(
      await raw(gw, "GET", "/metrics", { headers: { authorization: `Basic ${METRICS_TOKEN}` } }),
      401,
      "invalid_api_key"
    )
  })

  it("answers METRICS_TOKEN and ADMIN_TOKEN alike, in Prometheus text that promtool accepts", async () => {
    for (const token of [METRICS_TOKEN, ADMIN_TOKEN]) {
      const reply = await metricsText(gw, token)
      expect(reply.status).toBe(200)
      expect(reply.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8")
      const checked = promtool(["check", "metrics"], reply.body)
      expect(checked.output).toBe("")
      expect(checked.status).toBe(0)
    }
  })

  it("answers OpenMetrics when Accept asks for it, ending with # EOF", async () => {
    const reply = await metricsText(
      gw,
      METRICS_TOKEN,
      "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
    )
    expect(reply.status).toBe(200)
    expect(reply.headers.get("content-type")).toBe("application/openmetrics-text; version=1.0.0; charset=utf-8")
    const text = reply.body
    expect(text.endsWith("# EOF\n")).toBe(true)
    // A counter's family is named without `_total`; its samples carry it.
    expect(text).toContain("# TYPE mtg_http_requests counter\n")
    expect(samplesOf(text.replace("# EOF\n", "")).some((s) => s.name === "mtg_http_requests_total")).toBe(true)
  })

  it("counts a created task and its charge, and the queue gauge reads the database", async () => {
    const before = samplesOf((await metricsText(gw, METRICS_TOKEN)).body)
    const created0 = valueOf(before, "mtg_tasks_created_total", { model: "provy-famS-2.0-480p" }) ?? 0
    const acct = await createAccount(gw, { name: "metered", wallet_credits: 10 })
    const created = await api(gw, acct).createVideoReply(videoRequest())
    expect(created.status).toBe(202)
    const id = created.task.id
    const read = await replyOf(
      api(gw, acct).client((c) => c.resource.taskRead.getVideoTask({ path: { task_id: id }, withResponse: true }))
    )
    expect(read.status).toBe(200)
    // A path no route has, carrying something that must not become a label.
    expect((await raw(gw, "GET", `/nowhere/${id}-x`)).status).toBe(404)
    // The full path (a query string) and the fast route count under the same template.
    expect((await raw(gw, "GET", `/v1/video/tasks/${id}?x=1`, { key: acct.resource.key })).status)
      .toBe(200)

    const text = (await metricsText(gw, METRICS_TOKEN)).body
    const after = samplesOf(text)
    expect(valueOf(after, "mtg_tasks_created_total", { kind: "video", model: "provy-famS-2.0-480p" })).toBe(
      created0 + 1
    )
    // 4 s at 0.04 credits a second.
    expect(valueOf(after, "mtg_credits_charged_total", { model: "provy-famS-2.0-480p" })).toBeCloseTo(0.16, 6)
    // ROLE=api: nothing claims it, so it waits queued on its channel.
    expect(valueOf(after, "mtg_tasks", { state: "available", channel: "sandbox" })).toBe(1)
    expect(valueOf(after, "mtg_tasks_oldest_due_age_seconds", { state: "available", channel: "sandbox" }))
      .toBeGreaterThanOrEqual(0)
    expect(valueOf(after, "mtg_channel_in_flight", { channel: "sandbox" })).toBe(0)
    expect(valueOf(after, "mtg_channel_concurrency", { channel: "sandbox" })).toBe(2)
    expect(valueOf(after, "mtg_breaker_open", { channel: "sandbox" })).toBe(0)
    expect(valueOf(after, "mtg_webhook_events_pending")).toBe(0)
    // The reads went through the fast route and the full path, the create through the router: all by their template.
    expect(
      valueOf(after, "mtg_http_requests_total", { method: "GET", route: "/v1/video/tasks/:task_id", status: "200" })
    ).toBe(2)
    expect(valueOf(after, "mtg_http_requests_total", { method: "GET", route: "unmatched", status: "404" })).toBe(1)
    expect(valueOf(after, "mtg_http_requests_total", { method: "POST", route: "/v1/video/tasks", status: "202" }))
      .toBe(1)
    expect(
      valueOf(after, "mtg_http_request_duration_seconds_count", { method: "GET", route: "/v1/video/tasks/:task_id" })
    ).toBe(2)
    // No id, key or prompt in any label.
    for (const secret of [id, acct.id, acct.model.key, acct.resource.key, "red fox"]) {
      expect(text).not.toContain(secret)
    }
  })

  it("the channel state gauge reads the database: enabled when never set, draining after a drain", async () => {
    const stateOf = async () => {
      const samples = samplesOf((await metricsText(gw, METRICS_TOKEN)).body)
      return Object.fromEntries(
        ["enabled", "draining", "disabled"].map((state) => [
          state,
          valueOf(samples, "mtg_channel_state", { channel: "sandbox", state })
        ])
      )
    }
    expect(await stateOf()).toEqual({ enabled: 1, draining: 0, disabled: 0 })
    expect((await operator(gw).setChannelState("sandbox", "drain", "metrics")).state).toBe("draining")
    // Read at the scrape from the table, not from this replica's copy: no wait for the copy's next read.
    expect(await stateOf()).toEqual({ enabled: 0, draining: 1, disabled: 0 })
    const checked = promtool(["check", "metrics"], (await metricsText(gw, METRICS_TOKEN)).body)
    expect(checked.output).toBe("")
    expect((await operator(gw).setChannelState("sandbox", "enable")).state).toBe("enabled")
    expect(await stateOf()).toEqual({ enabled: 1, draining: 0, disabled: 0 })
  })
})
