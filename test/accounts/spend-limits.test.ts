import { rmSync } from "node:fs"
import { afterAll, afterEach, describe, expect, it } from "vitest"
import { createAccount, operator } from "../support/adminApi.ts"
import { api } from "../support/api.ts"
import { unthrottled } from "../support/config.ts"
import { backend } from "../support/database.ts"
import { eventually } from "../support/eventually.ts"
import { ADMIN_TOKEN, freePort, startGateway, type TestGateway } from "../support/gateway.ts"
import { expectError, raw } from "../support/http.ts"
import { type Installation, installation, withDatabase } from "../support/installation.ts"
import { waitForHealth } from "../support/process.ts"
import { type Receiver, startReceiver, verifyStandardWebhook } from "../support/receiver.ts"
import { videoRequest } from "../support/tasks.ts"

/**
 * Spend limits per model token and the low-balance alert (docs/api.md,
 * Spend limits; docs/webhooks.md, account.balance_low). The sandbox's famS
 * 2.0 480p costs 0.04 credits a second: a 4 s task is 0.16 credits.
 */
const TASK = 0.16
const dirs: Array<string> = []
afterAll(() => dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })))

const config = () => {
  const dir = unthrottled()
  dirs.push(dir)
  return dir
}

describe(`spend limits per key (${backend})`, () => {
  let gw: TestGateway
  afterEach(() => gw?.close())

  it("a create past the key's daily limit answers 429 and charges nothing; a refund gives the room back", async () => {
    // The API alone: what is created stays queued, so it can be cancelled (and refunded) at will.
    gw = await startGateway({ CONFIG_DIR: config() })
    const acct = await createAccount(gw, { name: "limited", wallet_credits: 100 })
    const admin = operator(gw)
    const limits = await admin.call((c) =>
      c.admin.setKeyLimits({ path: { key_id: acct.model.id }, payload: { daily_credits: 3 * TASK } })
    )
    expect(limits).toEqual({
      id: acct.model.id,
      object: "api_key",
      limits: { daily_credits: 0.48, monthly_credits: null },
      spent: { today: 0, this_month: 0 }
    })
    const ids: Array<string> = []
    for (let i = 0; i < 3; i++) ids.push((await api(gw, acct).createVideo(videoRequest())).id)
    const before = await admin.account(acct.id)
    const quote = await raw(gw, "POST", "/v1/video/tasks/quote", { key: acct.model.key, json: videoRequest() })
    expect((quote.body as any).spend).toEqual({
      spent_today: 0.48,
      spent_this_month: 0.48,
      daily_limit: 0.48,
      monthly_limit: null,
      room: false
    })

    const refused = await raw(gw, "POST", "/v1/video/tasks", { key: acct.model.key, json: videoRequest() })
    expectError(refused, 429, "spend_limit_exceeded", "rate_limit_error")
    // Until the next UTC midnight.
    const retryAfter = Number(refused.headers.get("retry-after"))
    expect(retryAfter).toBeGreaterThan(0)
    expect(retryAfter).toBeLessThanOrEqual(86_400)
    const after = await admin.account(acct.id)
    expect(after.wallet_credits).toBe(before.wallet_credits)
    expect(after.ledger.entries).toBe(before.ledger.entries)
    const key = after.keys.find((k) => k.id === acct.model.id)!
    expect(key.limits).toEqual({ daily_credits: 0.48, monthly_credits: null })
    expect(key.spent).toEqual({ today: 0.48, this_month: 0.48 })

    // A cancelled task is refunded, and what it cost no longer counts against the key.
    expect((await raw(gw, "POST", `/v1/video/tasks/${ids[0]}/cancel`, { key: acct.resource.key })).status).toBe(200)
    const refunded = await admin.account(acct.id)
    expect(refunded.keys.find((k) => k.id === acct.model.id)!.spent.today).toBe(0.32)
    expect((await raw(gw, "POST", "/v1/video/tasks", { key: acct.model.key, json: videoRequest() })).status).toBe(202)

    // A monthly limit holds as well; null removes the daily one.
    await admin.call((c) =>
      c.admin.setKeyLimits({ path: { key_id: acct.model.id }, payload: { daily_credits: null, monthly_credits: 0.5 } })
    )
    expectError(
      await raw(gw, "POST", "/v1/video/tasks", { key: acct.model.key, json: videoRequest() }),
      429,
      "spend_limit_exceeded"
    )
    // Another key of the same account has a budget of its own (none).
    const second = await admin.call((c) => c.admin.createKey({ path: { id: acct.id }, payload: { kind: "model" } }))
    expect((await raw(gw, "POST", "/v1/video/tasks", { key: second.key, json: videoRequest() })).status).toBe(202)
    // Resource keys create nothing: they take no limits.
    expectError(
      await raw(gw, "POST", `/admin/v1/keys/${acct.resource.id}/limits`, {
        key: ADMIN_TOKEN,
        json: { daily_credits: 1 }
      }),
      400,
      "invalid_request"
    )
  })

  it("the low-balance event is sent once per crossing of the threshold, signed like every event", async () => {
    let hook: Receiver | undefined
    try {
      hook = await startReceiver()
      // With the engine, so the outbox is delivered.
      gw = await startGateway({ CONFIG_DIR: config(), ROLE: "all" })
      const acct = await createAccount(gw, { name: "thrifty", wallet_credits: 1 })
      const admin = operator(gw)
      const { key } = await admin.setWebhook(acct.id, { url: hook.url })
      const set = await admin.call((c) =>
        c.admin.setLowBalance({ path: { id: acct.id }, payload: { threshold_credits: 0.6 } })
      )
      expect(set).toEqual({ threshold_credits: 0.6, alerted: false })
      // 1 → 0.84 → 0.68: above; → 0.52: below, the event; → 0.36: still below, none.
      for (let i = 0; i < 4; i++) await api(gw, acct).createVideo(videoRequest())
      const low = () => hook!.receipts.filter((r) => r.json?.type === "account.balance_low")
      await eventually(() => low().length === 1, "the low-balance event")
      const payload = verifyStandardWebhook(low()[0]!, key!)
      expect(payload.data.object).toEqual({
        object: "account.balance",
        account_id: acct.id,
        wallet_credits: 0.52,
        subscription_credits: 0,
        threshold_credits: 0.6
      })
      expect((await admin.account(acct.id)).low_balance).toEqual({ threshold_credits: 0.6, alerted: true })
      // Credits bring it back above: armed again, and the next crossing sends a second event.
      await admin.addCredits(acct.id, { wallet: 0.3 })
      expect((await admin.account(acct.id)).low_balance.alerted).toBe(false)
      await api(gw, acct).createVideo(videoRequest())
      await eventually(() => low().length === 2, "the second crossing's event")
      // The task events arrive too; no third low-balance event came.
      await eventually(
        () => hook!.receipts.filter((r) => r.json?.type === "video.task.succeeded").length === 5,
        "tasks"
      )
      expect(low()).toHaveLength(2)
    } finally {
      await hook?.close()
    }
  }, 120_000)
})

// Two API replicas need two processes on one database: PostgreSQL only.
if (backend === "postgresql") {
  describe("spend limits on two replicas (postgresql)", () => {
    let site: Installation | undefined
    afterEach(() => site?.close())

    it("50 concurrent creates against a limit of 10 tasks' worth charge exactly 10", async () => {
      site = await installation()
      const dir = config()
      await site.serve("api", dir)
      const secondPort = await freePort()
      const second = site.launch("api", dir, {}, secondPort)
      if (!(await waitForHealth(second, 60_000))) throw new Error(second.output().slice(-4000))
      const replicas = [site.target, { url: `http://127.0.0.1:${secondPort}` }]
      const acct = await createAccount(site.target, { name: "fifty", wallet_credits: 100 })
      await operator(site.target).call((c) =>
        c.admin.setKeyLimits({ path: { key_id: acct.model.id }, payload: { daily_credits: 10 * TASK } })
      )
      const statuses = await Promise.all(
        Array.from(
          { length: 50 },
          (_, i) =>
            raw(replicas[i % 2]!, "POST", "/v1/video/tasks", { key: acct.model.key, json: videoRequest() })
              .then((r) => r.status)
        )
      )
      expect(statuses.filter((s) => s === 202)).toHaveLength(10)
      expect(statuses.filter((s) => s === 429)).toHaveLength(40)
      const charges = await withDatabase(
        { dbUrl: site.db.url, dataDir: site.dataDir },
        (rows) => rows(`SELECT count(*)::int AS n FROM ledger WHERE account_id = $1 AND kind = 'charge'`, [acct.id])
      )
      expect(charges[0].n).toBe(10)
      const detail = await operator(site.target).account(acct.id)
      expect(detail.wallet_credits).toBeCloseTo(100 - 10 * TASK, 6)
      expect(detail.keys.find((k) => k.id === acct.model.id)!.spent.today).toBeCloseTo(10 * TASK, 6)
    }, 120_000)
  })
}
