import type { Browser, BrowserContext, Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createAccount } from "../support/adminApi.ts"
import { api, rejection } from "../support/api.ts"
import { collectErrors, ensureConsoleBuilt, inspectPage, launchBrowser } from "../support/browser.ts"
import { ADMIN_TOKEN, startGateway, type TestGateway } from "../support/gateway.ts"
import { type Receiver, startReceiver } from "../support/receiver.ts"
import { videoRequest } from "../support/tasks.ts"

/**
 * The console in a real browser, against a whole gateway (API and engine)
 * on loopback: an owner signs in, watches a task finish without a reload,
 * plays its video, regenerates the webhook key and tests it, deletes the
 * result; the operator's pages are visited too. Every page is looked at
 * 360 px and 1280 px wide (screenshots under test-results/console/), checked
 * for sideways overflow and with axe-core.
 */
let gw: TestGateway
let receiver: Receiver
let browser: Browser
let acme: Awaited<ReturnType<typeof createAccount>>
const problems: Array<string> = []

beforeAll(async () => {
  ensureConsoleBuilt()
  gw = await startGateway({ ROLE: "all", WEBHOOK_RETRY_INTERVAL_S: "1" })
  acme = await createAccount(gw, { name: "Acme Studio", wallet_credits: 50 })
  receiver = await startReceiver()
  browser = await launchBrowser()
}, 180_000)

afterAll(async () => {
  await browser?.close()
  await receiver?.close()
  await gw?.close()
})

const openConsole = async (key: string): Promise<{ context: BrowserContext; page: Page; errors: Array<string> }> => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } })
  const page = await context.newPage()
  const errors = collectErrors(page)
  await page.goto(`${gw.url}/console`)
  await page.getByLabel("Key or admin token").fill(key)
  await page.getByRole("button", { name: "Sign in" }).click()
  return { context, page, errors }
}

// A real browser over the whole console: its steps wait up to 120 s each, so the test's own bound is wider than 30 s.
describe("console end to end", { timeout: 180_000 }, () => {
  it("an owner signs in, watches a task succeed live, plays it, tests the webhook and deletes the asset", async () => {
    const context0 = await browser.newContext({ viewport: { width: 1280, height: 900 } })
    const signInPage = await context0.newPage()
    const signInErrors = collectErrors(signInPage)
    await signInPage.goto(`${gw.url}/console`)
    await signInPage.getByLabel("Key or admin token").waitFor()
    problems.push(...await inspectPage(signInPage, "sign-in"))
    expect(signInErrors).toEqual([])
    await context0.close()

    const { context, page, errors } = await openConsole(acme.resource.key)
    await page.getByRole("heading", { name: "Task log" }).waitFor()
    // The key is in no storage the page can read, and not in the URL.
    expect(await page.evaluate(() => JSON.stringify(localStorage) + JSON.stringify(sessionStorage) + document.cookie))
      .not.toContain("ak_")
    expect(page.url()).not.toContain(acme.resource.key)

    // The log's list requests, counted: while a running task is followed through its stream, the list is not re-read.
    let listReads = 0
    page.on("request", (r) => {
      if (new URL(r.url()).pathname === "/console/api/tasks") listReads++
    })
    const owner = api(gw, acme)
    const created = await owner.createVideoReply(videoRequest({
      output: { duration: 4 },
      client_reference_id: "e2e-1",
      provider_options: { sandbox: { delay_ms: 12_000 } }
    }))
    expect(created.status).toBe(202)
    const id = created.task.id
    const followed = page.waitForResponse((r) => r.url().endsWith(`/console/api/tasks/${id}/events`))
    const row = page.locator(`tr[data-task-id="${id}"]`)
    await row.waitFor({ timeout: 30_000 })
    expect((await followed).headers()["content-type"]).toMatch(/^text\/event-stream/)
    const readsWhileFollowing = listReads
    expect((await owner.getVideo(id)).status).not.toBe("succeeded")
    await row.getByText("succeeded").waitFor({ timeout: 120_000 })
    // The task ran on for seconds past the 5 s poll interval and turned succeeded in the row without a reload.
    expect(listReads).toBe(readsWhileFollowing)
    problems.push(...await inspectPage(page, "task-log"))

    await row.getByRole("link", { name: id }).click()
    const video = page.locator("video")
    await video.waitFor()
    const task = await owner.getVideo(id)
    const result = task.result?.videos[0]
    if (result === undefined) throw new Error(`task ${id} has no video: ${JSON.stringify(task)}`)
    const played = await video.evaluate(async (v: HTMLVideoElement) => {
      if (v.readyState < 1) await new Promise((r) => v.addEventListener("loadedmetadata", r, { once: true }))
      v.muted = true
      await v.play()
      // In the page: half a second of playing is the scenario.
      await new Promise((r) => setTimeout(r, 500))
      return { duration: v.duration, time: v.currentTime, error: v.error?.message ?? null }
    })
    expect(played.error).toBeNull()
    expect(played.time).toBeGreaterThan(0)
    expect(Math.abs(played.duration - result.duration_ms / 1000)).toBeLessThan(0.1)
    expect(Math.round(played.duration)).toBe(4)
    await page.getByText("pre-charge").waitFor()
    problems.push(...await inspectPage(page, "task-detail"))

    // A task page opened before the task ends follows its live status stream: the page polls a
    // task only once it is finished, so the change can only come from the stream.
    const slow = await owner.createVideo(
      videoRequest({ output: { duration: 4 }, provider_options: { sandbox: { delay_ms: 4000 } } })
    )
    const slowId = slow.id
    const events = page.waitForResponse((r) => r.url().endsWith(`/console/api/tasks/${slowId}/events`))
    await page.goto(`${gw.url}/console#/tasks/${slowId}`)
    await page.locator("h1", { hasText: slowId }).waitFor()
    expect((await owner.getVideo(slowId)).status).not.toBe("succeeded")
    expect((await events).headers()["content-type"]).toMatch(/^text\/event-stream/)
    await page.locator("video").waitFor({ timeout: 120_000 })

    await page.getByRole("link", { name: "Webhook" }).click()
    await page.getByLabel("Receiver URL").fill(receiver.url)
    await page.getByRole("button", { name: "Save" }).click()
    await page.getByText("Webhook settings saved.").waitFor()
    await page.getByRole("button", { name: "Show key" }).click()
    const keyBox = page.getByTestId("webhook-key")
    const oldKey = (await keyBox.textContent())!
    expect(oldKey).toMatch(/^wk-/)
    await page.getByRole("button", { name: "Regenerate key" }).click()
    await page.getByRole("button", { name: "Confirm: regenerate" }).click()
    await page.getByText("New key made").waitFor()
    await expect.poll(() => keyBox.textContent()).not.toBe(oldKey)
    const newKey = (await keyBox.textContent())!
    expect(newKey).toMatch(/^wk-/)
    await page.getByRole("button", { name: "Send test event" }).click()
    const [receipt] = await receiver.waitFor(1, 30_000)
    expect(receipt!.json.type).toBe("webhook.test")
    expect(receipt!.headers.authorization).toBe(`Bearer ${newKey}`)
    await page.locator(".event .badge-delivered").first().waitFor({ timeout: 30_000 })
    problems.push(...await inspectPage(page, "webhook"))

    await page.getByRole("link", { name: "Resources" }).click()
    const assetId = result.asset_id
    const assetRow = page.locator(`tr[data-asset-id="${assetId}"]`)
    await assetRow.waitFor()
    problems.push(...await inspectPage(page, "resources"))
    await assetRow.getByRole("button", { name: /^Delete/ }).click()
    await assetRow.getByRole("button", { name: "Confirm delete" }).click()
    await assetRow.waitFor({ state: "detached" })
    expect((await rejection(owner.getAsset(assetId))).status).toBe(404)

    expect(errors).toEqual([])
    await context.close()
  }, 300_000)

  it("the operator sees accounts, balances, ledger and keys, and works as an account", async () => {
    const { context, page, errors } = await openConsole(ADMIN_TOKEN)
    await page.getByRole("heading", { name: "Accounts", exact: true }).waitFor()
    problems.push(...await inspectPage(page, "accounts"))
    await page.getByRole("link", { name: "Acme Studio" }).click()
    await page.getByRole("heading", { name: "Acme Studio", exact: true }).waitFor()
    await page.getByLabel("Wallet credits (±)").fill("5")
    await page.getByRole("button", { name: "Add credits" }).click()
    await page.getByText("admin adjustment").waitFor()
    await page.getByLabel("Kind").selectOption("resource")
    await page.getByRole("button", { name: "Create key" }).click()
    await expect.poll(() => page.getByLabel("New key").textContent()).toMatch(/^ak_/)
    problems.push(...await inspectPage(page, "account-detail"))
    await page.getByRole("link", { name: "Accounts" }).first().click()
    await page.getByRole("button", { name: "Work as Acme Studio" }).click()
    await page.getByRole("heading", { name: "Task log" }).waitFor()
    await page.locator("tr[data-task-id]").first().waitFor()
    expect(errors).toEqual([])
    await context.close()
  }, 180_000)

  it("has no overflow and no serious or critical accessibility violation on any page", () => {
    expect(problems).toEqual([])
  })
})
