import type { Browser } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createAccount, operator } from "../support/adminApi.ts"
import { api } from "../support/api.ts"
import { collectErrors, ensureConsoleBuilt, inspectPage, launchBrowser } from "../support/browser.ts"
import { unthrottled } from "../support/config.ts"
import { ADMIN_TOKEN, startGateway, type TestGateway } from "../support/gateway.ts"
import { query, videoRequest } from "../support/tasks.ts"

/**
 * The operator's Channels, Overview and Money pages in a real browser against a
 * whole gateway: sign in with the admin token, drain the sandbox channel
 * with a reason and see its state (and the admin API's), enable it again,
 * run the check and see its result; the overview draws its charts as SVG
 * with bars for the tasks this test ran; the Money page shows the day's
 * credits and the loss of a failed task whose attempt a provider billed.
 * The pages are looked at 360 px and 1280 px wide (no sideways overflow, no
 * serious accessibility violation).
 */
let gw: TestGateway
let browser: Browser

const sandboxChannel = () => operator(gw).call((c) => c.adminChannels.getChannel({ path: { name: "sandbox" } }))

beforeAll(async () => {
  ensureConsoleBuilt()
  gw = await startGateway({ CONFIG_DIR: unthrottled(), ROLE: "all" })
  const acme = await createAccount(gw, { name: "ops-e2e", wallet_credits: 100 })
  for (const outcome of ["succeed", "fail"] as const) {
    const created = await api(gw, acme).createVideo(videoRequest({ provider_options: { sandbox: { outcome } } }))
    await api(gw, acme).waitTask("video", created.id)
  }
  browser = await launchBrowser()
}, 180_000)

afterAll(async () => {
  await browser?.close()
  await gw?.close()
})

describe("console operator pages end to end", () => {
  it("drains and enables a channel, runs its check, and draws the overview's charts", async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } })
    const page = await context.newPage()
    const errors = collectErrors(page)
    const problems: Array<string> = []
    await page.goto(`${gw.url}/console`)
    await page.getByLabel("Key or admin token").fill(ADMIN_TOKEN)
    await page.getByRole("button", { name: "Sign in" }).click()
    await page.getByRole("heading", { name: "Accounts", exact: true }).waitFor()

    await page.getByRole("link", { name: "Channels" }).click()
    await page.getByRole("heading", { name: "Channels", exact: true }).waitFor()
    const card = page.locator("section", { has: page.getByRole("heading", { name: "sandbox", exact: true }) })
    await card.locator(".badge", { hasText: "enabled" }).waitFor()
    await card.getByLabel("Reason (optional)").fill("provider maintenance")
    await card.getByRole("button", { name: "Drain sandbox" }).click()
    await card.locator(".badge", { hasText: "draining" }).waitFor()
    await card.getByText("provider maintenance").waitFor()
    expect(await sandboxChannel()).toMatchObject({
      state: "draining",
      reason: "provider maintenance"
    })
    problems.push(...await inspectPage(page, "channels"))
    await card.getByRole("button", { name: "Enable sandbox" }).click()
    await card.locator(".badge", { hasText: "enabled" }).waitFor()
    expect((await sandboxChannel()).state).toBe("enabled")
    await card.getByRole("button", { name: "Check sandbox" }).click()
    await card.locator("[data-check=\"ok\"]").waitFor()

    await page.getByRole("link", { name: "Overview" }).click()
    await page.getByRole("heading", { name: "Overview", exact: true }).waitFor()
    const tasksChart = page.locator("section[aria-labelledby=ov-tasks] svg")
    await tasksChart.waitFor()
    // One bar for the succeeded task and one for the failed one, in this hour.
    expect(await tasksChart.locator("rect.bar").count()).toBe(2)
    expect(await page.locator("section[aria-labelledby=ov-failures] svg rect.bar").count()).toBe(1)
    expect(await page.locator("section[aria-labelledby=ov-times] svg rect.bar").count()).toBe(2)
    expect(await page.locator("section[aria-labelledby=ov-credits] svg rect.bar").count()).toBeGreaterThanOrEqual(2)
    problems.push(...await inspectPage(page, "overview"))

    // The sandbox bills nothing: the failed task's attempt is given a cost as a billing provider's would be.
    await query(gw, (sql) =>
      sql`
      UPDATE task_attempts SET cost_micros = 50000, billed = true
      WHERE task_id IN (SELECT id FROM tasks WHERE status = 'failed')`)
    await page.getByRole("link", { name: "Money" }).click()
    await page.getByRole("heading", { name: "Money", exact: true }).waitFor()
    const days = page.locator("section[aria-labelledby=money-days]")
    await days.locator("svg rect.bar").first().waitFor()
    // Two tasks of 0.16 charged today, one refunded; the failed one cost 0.05 upstream.
    const today = days.locator("tbody tr")
    expect(await today.count()).toBe(1)
    expect(await today.locator("td[data-label=Net]").textContent()).toBe("0.16")
    expect(await today.locator("td[data-label=Margin]").textContent()).toBe("0.11")
    const losses = page.locator("section[aria-labelledby=money-losses] tbody tr")
    expect(await losses.count()).toBe(1)
    expect(await losses.locator("td[data-label=Why]").textContent()).toBe("billed, refunded")
    problems.push(...await inspectPage(page, "money"))

    expect(problems).toEqual([])
    expect(errors).toEqual([])
    await context.close()
  }, 300_000)
})
