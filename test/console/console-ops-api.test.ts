import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createAccount } from "../support/adminApi.ts"
import { unthrottled } from "../support/config.ts"
import { backend } from "../support/database.ts"
import { ADMIN_TOKEN, startGateway, type TestGateway } from "../support/gateway.ts"
import { admin, call, expectError } from "../support/http.ts"
import { ledgerOf, pollTask, videoRequest } from "../support/tasks.ts"

/**
 * The operator's console routes over plain HTTP: the overview's series match
 * the tasks this test ran (a fresh database, so the counts are exact); the
 * channel view and its state changes go through the console's POSTs with the
 * CSRF token, and the admin API sees the same state; neither an owner's
 * session nor no session opens them.
 */
let gw: TestGateway
let acme: Awaited<ReturnType<typeof createAccount>>
const taskIds: Array<string> = []

const signIn = async (key: string) => {
  const reply = await call(gw, "POST", "/console/api/session", { json: { key } })
  expect(reply.status).toBe(201)
  return { cookie: (reply.headers.get("set-cookie") ?? "").split(";")[0]!, csrf: reply.body.csrf_token as string }
}

beforeAll(async () => {
  gw = await startGateway({ CONFIG_DIR: unthrottled(), ROLE: "all" })
  acme = await createAccount(gw, { name: "ops-acme", wallet_credits: 1000 })
  for (const outcome of ["succeed", "succeed", "fail"] as const) {
    const created = await call(gw, "POST", "/v1/video/tasks", {
      key: acme.model.key,
      json: videoRequest({ provider_options: { sandbox: { outcome } } })
    })
    expect(created.status).toBe(202)
    taskIds.push(created.body.id)
  }
  for (const id of taskIds) await pollTask(gw, acme.resource.key, id)
}, 180_000)
afterAll(() => gw?.close())

describe(`console operator routes (${backend})`, () => {
  it("the overview's series count the tasks, times, failures and credits this test made", async () => {
    const operator = await signIn(ADMIN_TOKEN)
    const reply = await call(gw, "GET", "/console/api/operator/overview", { headers: { cookie: operator.cookie } })
    expect(reply.status).toBe(200)
    const o = reply.body
    expect(o.object).toBe("console.overview")
    expect(o.tasks_per_hour).toHaveLength(24)
    const sum = (key: string) => o.tasks_per_hour.reduce((n: number, h: any) => n + h[key], 0)
    expect([sum("succeeded"), sum("failed"), sum("queued"), sum("in_progress")]).toEqual([2, 1, 0, 0])

    expect(o.time_to_result).toHaveLength(1)
    expect(o.time_to_result[0]).toMatchObject({ channel: "sandbox", tasks: 2 })
    expect(o.time_to_result[0].p95_ms).toBeGreaterThanOrEqual(o.time_to_result[0].p50_ms)

    const failed = (await call(gw, "GET", `/v1/video/tasks/${taskIds[2]}`, { key: acme.resource.key })).body
    expect(o.failures_by_code).toEqual([{ code: failed.error.code, count: 1 }])

    const lines = (await Promise.all(taskIds.map((id) => ledgerOf(gw, id)))).flat()
    const credits = (kind: string) =>
      lines.filter((l) => l.kind === kind)
        .reduce((n, l) => n + Math.abs(Number(l.wallet_micros)) + Math.abs(Number(l.subscription_micros)), 0) /
      1_000_000
    expect(credits("charge")).toBeGreaterThan(0)
    expect(credits("refund")).toBeGreaterThan(0)
    expect(o.credits_per_day).toHaveLength(14)
    const today = o.credits_per_day.at(-1)
    expect(today.charged).toBeCloseTo(credits("charge"), 6)
    expect(today.refunded).toBeCloseTo(credits("refund"), 6)
    expect(o.credits_per_day.slice(0, -1).every((d: any) => d.charged === 0 && d.refunded === 0)).toBe(true)
  })

  it("lists channels, drains and enables through the console's POSTs with the CSRF token, and runs the check", async () => {
    const { cookie, csrf } = await signIn(ADMIN_TOKEN)
    const list = await call(gw, "GET", "/console/api/operator/channels", { headers: { cookie } })
    expect(list.status).toBe(200)
    const sandbox = list.body.data.find((c: any) => c.name === "sandbox")
    expect(sandbox).toMatchObject({ object: "channel", adapter: "sandbox", state: "enabled" })
    expect(sandbox.last_15_minutes).toMatchObject({ submitted: 3, succeeded: 2 })

    const path = "/console/api/operator/channels/sandbox"
    // Without the token: refused, and the state is unchanged.
    expect((await call(gw, "POST", `${path}/drain`, { headers: { cookie }, json: {} })).status).toBe(403)
    expect((await admin(gw, "GET", "/admin/v1/channels/sandbox")).body.state).toBe("enabled")

    const drained = await call(gw, "POST", `${path}/drain`, {
      headers: { cookie, "x-csrf-token": csrf },
      json: { reason: "upstream maintenance" }
    })
    expect(drained.status).toBe(200)
    expect(drained.body).toMatchObject({ name: "sandbox", state: "draining", reason: "upstream maintenance" })
    expect((await admin(gw, "GET", "/admin/v1/channels/sandbox")).body).toMatchObject({
      state: "draining",
      reason: "upstream maintenance"
    })

    const enabled = await call(gw, "POST", `${path}/enable`, { headers: { cookie, "x-csrf-token": csrf } })
    expect(enabled.status).toBe(200)
    expect(enabled.body).toMatchObject({ state: "enabled", reason: null })

    const checked = await call(gw, "POST", `${path}/check`, { headers: { cookie, "x-csrf-token": csrf } })
    expect(checked.status).toBe(200)
    expect(checked.body).toMatchObject({ ok: true, result: "ok" })

    const unknown = await call(gw, "POST", "/console/api/operator/channels/nowhere/disable", {
      headers: { cookie, "x-csrf-token": csrf }
    })
    expectError(unknown, 404, "channel_not_found")
  })

  it("refuses without an operator's session", async () => {
    expect((await call(gw, "GET", "/console/api/operator/channels")).status).toBe(401)
    expect((await call(gw, "GET", "/console/api/operator/overview")).status).toBe(401)
    const owner = await signIn(acme.resource.key)
    const headers = { cookie: owner.cookie, "x-csrf-token": owner.csrf }
    expect((await call(gw, "GET", "/console/api/operator/overview", { headers })).status).toBe(403)
    expect((await call(gw, "GET", "/console/api/operator/channels", { headers })).status).toBe(403)
    expect((await call(gw, "POST", "/console/api/operator/channels/sandbox/disable", { headers })).status).toBe(403)
    expect((await admin(gw, "GET", "/admin/v1/channels/sandbox")).body.state).toBe("enabled")
  })
})
