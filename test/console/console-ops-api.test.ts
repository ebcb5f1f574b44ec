import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createAccount, operator } from "../support/adminApi.ts"
import { api } from "../support/api.ts"
import { unthrottled } from "../support/config.ts"
import { consoleSignIn } from "../support/consoleApi.ts"
import { backend } from "../support/database.ts"
import { ADMIN_TOKEN, startGateway, type TestGateway } from "../support/gateway.ts"
import { expectError, raw } from "../support/http.ts"
import { ledgerOf, videoRequest } from "../support/tasks.ts"

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

const sandboxChannel = () => operator(gw).call((c) => c.adminChannels.getChannel({ path: { name: "sandbox" } }))

beforeAll(async () => {
  gw = await startGateway({ CONFIG_DIR: unthrottled(), ROLE: "all" })
  acme = await createAccount(gw, { name: "ops-acme", wallet_credits: 1000 })
  const owner = api(gw, acme)
  for (const outcome of ["succeed", "succeed", "fail"] as const) {
    const created = await owner.createVideo(videoRequest({ provider_options: { sandbox: { outcome } } }))
    taskIds.push(created.id)
  }
  for (const id of taskIds) await owner.waitTask("video", id)
}, 180_000)
afterAll(() => gw?.close())

describe(`console operator routes (${backend})`, () => {
  it("the overview's series count the tasks, times, failures and credits this test made", async () => {
    const { call } = await consoleSignIn(gw, ADMIN_TOKEN)
    const o = await call((c) => c.getOverview())
    expect(o.object).toBe("console.overview")
    expect(o.tasks_per_hour).toHaveLength(24)
    const sum = (key: "succeeded" | "failed" | "queued" | "in_progress") =>
      o.tasks_per_hour.reduce((n, h) => n + h[key], 0)
    expect([sum("succeeded"), sum("failed"), sum("queued"), sum("in_progress")]).toEqual([2, 1, 0, 0])

    expect(o.time_to_result).toHaveLength(1)
    const times = o.time_to_result[0]!
    expect(times).toMatchObject({ channel: "sandbox", tasks: 2 })
    expect(times.p95_ms).toBeGreaterThanOrEqual(times.p50_ms ?? Number.POSITIVE_INFINITY)

    const failed = await api(gw, acme).getVideo(taskIds[2]!)
    expect(o.failures_by_code).toEqual([{ code: failed.error?.code, count: 1 }])

    const lines = (await Promise.all(taskIds.map((id) => ledgerOf(gw, id)))).flat()
    const credits = (kind: string) =>
      lines.filter((l) => l.kind === kind)
        .reduce((n, l) => n + Math.abs(Number(l.wallet_micros)) + Math.abs(Number(l.subscription_micros)), 0) /
      1_000_000
    expect(credits("charge")).toBeGreaterThan(0)
    expect(credits("refund")).toBeGreaterThan(0)
    expect(o.credits_per_day).toHaveLength(14)
    const today = o.credits_per_day.at(-1)!
    expect(today.charged).toBeCloseTo(credits("charge"), 6)
    expect(today.refunded).toBeCloseTo(credits("refund"), 6)
    expect(o.credits_per_day.slice(0, -1).every((d) => d.charged === 0 && d.refunded === 0)).toBe(true)
  })

  it("lists channels, drains and enables through the console's POSTs with the CSRF token, and runs the check", async () => {
    const { cookie, csrf, call } = await consoleSignIn(gw, ADMIN_TOKEN)
    const list = await call((c) => c.listChannels())
    const sandbox = list.data.find((c) => c.name === "sandbox")
    expect(sandbox).toMatchObject({ object: "channel", adapter: "sandbox", state: "enabled" })
    expect(sandbox?.last_15_minutes).toMatchObject({ submitted: 3, succeeded: 2 })

    const path = "/console/api/operator/channels/sandbox"
    // Without the token: refused, and the state is unchanged.
    expect((await raw(gw, "POST", `${path}/drain`, { headers: { cookie }, json: {} })).status).toBe(403)
    expect((await sandboxChannel()).state).toBe("enabled")

    const name = { name: "sandbox" }
    const drained = await call((c) => c.drainChannel({ path: name, payload: { reason: "upstream maintenance" } }))
    expect(drained).toMatchObject({ name: "sandbox", state: "draining", reason: "upstream maintenance" })
    expect(await sandboxChannel()).toMatchObject({ state: "draining", reason: "upstream maintenance" })

    const enabled = await call((c) => c.enableChannel({ path: name, payload: {} }))
    expect(enabled).toMatchObject({ state: "enabled", reason: null })

    const checked = await call((c) => c.checkChannel({ path: name }))
    expect(checked).toMatchObject({ ok: true, result: "ok" })

    const unknown = await raw(gw, "POST", "/console/api/operator/channels/nowhere/disable", {
      headers: { cookie, "x-csrf-token": csrf }
    })
    expectError(unknown, 404, "channel_not_found")
  })

  it("refuses without an operator's session", async () => {
    expect((await raw(gw, "GET", "/console/api/operator/channels")).status).toBe(401)
    expect((await raw(gw, "GET", "/console/api/operator/overview")).status).toBe(401)
    const owner = await consoleSignIn(gw, acme.resource.key)
    const headers = { cookie: owner.cookie, "x-csrf-token": owner.csrf }
    expect((await raw(gw, "GET", "/console/api/operator/overview", { headers })).status).toBe(403)
    expect((await raw(gw, "GET", "/console/api/operator/channels", { headers })).status).toBe(403)
    expect((await raw(gw, "POST", "/console/api/operator/channels/sandbox/disable", { headers })).status).toBe(403)
    expect((await sandboxChannel()).state).toBe("enabled")
  })
})
