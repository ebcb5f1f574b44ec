import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createAccount, type TestAccount } from "../support/adminApi.ts"
import { api } from "../support/api.ts"
import { unthrottled } from "../support/config.ts"
import { backend } from "../support/database.ts"
import { ADMIN_TOKEN, startGateway, type TestGateway } from "../support/gateway.ts"
import { expectError, raw } from "../support/http.ts"
import { query, videoRequest } from "../support/tasks.ts"

/**
 * The operator's money (docs/operating.md, Money): the usage report (JSON
 * and CSV, grouped, paged), the losses and an account's ledger, over tasks
 * the sandbox ran to their end, some failed and refunded. The sandbox's
 * runs cost nothing upstream, so the test gives their attempts a cost as a
 * billing provider's would record (what the adapters record is proven by
 * the channel tests); everything else is what the engine wrote.
 */

let gw: TestGateway
let a: TestAccount
let b: TestAccount
const from = Math.floor(Date.now() / 1000) - 60
let to = 0
const COST = 0.1

const get = async (path: string, accept?: string) =>
  raw(gw, "GET", path, { key: ADMIN_TOKEN, ...(accept === undefined ? {} : { headers: { accept } }) })

const run = async (account: TestAccount, fail: boolean, model = "provy-famS-2.0-480p") =>
  (await api(gw, account).createVideo(
    videoRequest({ model, ...(fail ? { provider_options: { sandbox: { outcome: "fail" } } } : {}) })
  )).id

beforeAll(async () => {
  gw = await startGateway({ CONFIG_DIR: unthrottled(), ROLE: "all" })
  a = await createAccount(gw, { name: "A", wallet_credits: 100 })
  b = await createAccount(gw, { name: "B", wallet_credits: 100 })
  // A: three successes and one failure on famS 480p, one success on famS 2.5 480p; B: two successes.
  const ids = [
    await run(a, false),
    await run(a, false),
    await run(a, false),
    await run(a, true),
    await run(a, false, "provy-famS-2.5-480p"),
    await run(b, false),
    await run(b, false)
  ]
  for (const id of ids) {
    const owner = ids.indexOf(id) < 5 ? a : b
    await api(gw, owner).waitTask("video", id, undefined, { deadlineMs: 120_000 })
  }
  // Each attempt billed COST upstream, as a provider that bills every run would have it recorded.
  await query(gw, (sql) => sql`UPDATE task_attempts SET cost_micros = ${COST * 1_000_000}, billed = true`)
  to = Math.floor(Date.now() / 1000) + 60
}, 240_000)
afterAll(() => gw?.close())

describe(`the usage report (${backend})`, () => {
  it("sums credits charged, refunded and net, upstream cost and margin per account and model", async () => {
    const res = await get(`/admin/v1/usage?from=${from}&to=${to}&group_by=model,account`)
    expect(res.status).toBe(200)
    const report = res.body as any
    expect(report).toMatchObject({ object: "usage.report", group_by: ["account", "model"], has_more: false })
    const row = (account: string, model: string) =>
      report.data.find((r: any) => r.account_id === account && r.model === model)
    // famS 2.0 480p costs 0.04 a second, 2.5 480p 0.05: a 4 s task 0.16 or 0.2.
    expect(row(a.id, "provy-famS-2.0-480p")).toEqual({
      account_id: a.id,
      model: "provy-famS-2.0-480p",
      tasks: 4,
      credits_charged: 0.64,
      credits_refunded: 0.16,
      credits_net: 0.48,
      upstream_cost: 0.4,
      billed_attempts: 4,
      margin: 0.08
    })
    expect(row(a.id, "provy-famS-2.5-480p")).toMatchObject({ tasks: 1, credits_net: 0.2, upstream_cost: 0.1 })
    expect(row(b.id, "provy-famS-2.0-480p")).toMatchObject({ tasks: 2, credits_charged: 0.32, credits_refunded: 0 })
    expect(report.data).toHaveLength(3)
    // Sorted by the grouping's keys, account then model.
    const keys = report.data.map((r: any) => `${r.account_id} ${r.model}`)
    expect(keys).toEqual([...keys].sort())
  })

  it("by day, as CSV for a spreadsheet: the same figures, a header, RFC 4180 lines", async () => {
    const json = (await get(`/admin/v1/usage?from=${from}&to=${to}&group_by=day`)).body as any
    const csv = await get(`/admin/v1/usage?from=${from}&to=${to}&group_by=day`, "text/csv")
    expect(csv.status).toBe(200)
    expect(csv.headers.get("content-type")).toMatch(/^text\/csv/)
    expect(csv.headers.get("content-disposition")).toMatch(/attachment; filename="usage-/)
    const lines = (csv.body as string).split("\r\n").filter(Boolean)
    expect(lines[0]).toBe(
      "day,tasks,credits_charged,credits_refunded,credits_net,upstream_cost,billed_attempts,margin"
    )
    const rows = lines.slice(1).map((l) => l.split(","))
    expect(rows).toEqual(json.data.map((r: any) => [
      r.day,
      ...[r.tasks, r.credits_charged, r.credits_refunded, r.credits_net, r.upstream_cost, r.billed_attempts, r.margin]
        .map(String)
    ]))
    expect(json.data.reduce((n: number, r: any) => n + r.tasks, 0)).toBe(7)
    expect(json.data[0].day).toMatch(/^\d{4}-\d{2}-\d{2}$/)
  })

  it("pages with a cursor: page after page, the same rows as one page", async () => {
    const whole = (await get(`/admin/v1/usage?from=${from}&to=${to}&group_by=account,model,channel`)).body as any
    const paged: Array<unknown> = []
    let cursor: string | null = null
    do {
      const page: any = (await get(
        `/admin/v1/usage?from=${from}&to=${to}&group_by=account,model,channel&limit=1${
          cursor === null ? "" : `&cursor=${cursor}`
        }`
      )).body
      paged.push(...page.data)
      cursor = page.next_cursor
      expect(page.has_more).toBe(cursor !== null)
    } while (cursor !== null)
    expect(paged).toEqual(whole.data)
    // A CSV page says where the next one is.
    const first = await get(`/admin/v1/usage?from=${from}&to=${to}&group_by=account,model&limit=1`, "text/csv")
    expect(first.headers.get("link")).toMatch(/^<\/admin\/v1\/usage\?.*cursor=[A-Za-z0-9_-]+.*>; rel="next"$/)
  })

  it("a window outside the tasks is empty; bad queries are 400 naming what is wrong", async () => {
    const empty = (await get(`/admin/v1/usage?from=1000&to=2000&group_by=day`)).body as any
    expect(empty.data).toEqual([])
    expectError(await get(`/admin/v1/usage?from=${to}&to=${from}`), 400, "invalid_request")
    expectError(await get(`/admin/v1/usage?from=0&to=${to}`), 400, "invalid_request")
    expectError(await get(`/admin/v1/usage?from=${from}&to=${to}&group_by=tenant`), 400, "invalid_request")
    expectError(await get(`/admin/v1/usage?from=${from}&to=${to}&group_by=day,day`), 400, "invalid_request")
    expectError(await get(`/admin/v1/usage?from=${from}&to=${to}&cursor=nonsense`), 400, "invalid_request")
    expectError(await get(`/admin/v1/usage?to=${to}`), 400, "invalid_request")
    expect((await raw(gw, "GET", `/admin/v1/usage?from=${from}&to=${to}`, { key: a.model.key })).status).toBe(401)
  })

  it("the losses: a billed attempt of a refunded task, and usage that differs from what was charged", async () => {
    // A's success reported at 10 s where 4 were asked and charged.
    const [longer] = await query<{ task_id: string }>(gw, (sql) =>
      sql`
      UPDATE task_attempts SET usage = '{"unit":"second","quantity":10,"reported":true}'::jsonb
      WHERE task_id = (SELECT id FROM tasks WHERE account_id = ${a.id} AND status = 'succeeded' ORDER BY seq LIMIT 1)
      RETURNING task_id`)
    const [failed] = await query<{ id: string }>(
      gw,
      (sql) => sql`SELECT id FROM tasks WHERE account_id = ${a.id} AND status = 'failed'`
    )
    const losses = (await get(`/admin/v1/usage/losses?from=${from}&to=${to}`)).body as any
    expect(losses.object).toBe("usage.losses")
    const byTask = new Map(losses.data.map((l: any) => [l.task_id, l]))
    expect(byTask.get(failed!.id)).toMatchObject({
      reasons: ["billed_while_refunded"],
      upstream_cost: COST,
      credits_refunded: 0.16,
      account_id: a.id
    })
    expect(byTask.get(longer!.task_id)).toMatchObject({
      reasons: ["usage_mismatch"],
      usage: { unit: "second", reported: 10, charged: 4 },
      credits_refunded: 0
    })
    expect(losses.data).toHaveLength(2)
  })
})

describe(`an account's ledger (${backend})`, () => {
  it("lists its lines newest first, in a window, page by page", async () => {
    const all = (await get(`/admin/v1/accounts/${a.id}/ledger`)).body as any
    // The initial credit, five charges, one refund.
    expect(all.data.map((l: any) => l.kind).sort()).toEqual([
      "charge",
      "charge",
      "charge",
      "charge",
      "charge",
      "credit",
      "refund"
    ])
    const charge = all.data.find((l: any) => l.kind === "charge")
    expect(charge.key_id).toBe(a.model.id)
    expect(charge.wallet_credits).toBeLessThan(0)
    const times = all.data.map((l: any) => l.created_at)
    expect(times).toEqual([...times].sort((x: number, y: number) => y - x))
    const first = (await get(`/admin/v1/accounts/${a.id}/ledger?limit=3`)).body as any
    const rest = (await get(`/admin/v1/accounts/${a.id}/ledger?cursor=${first.last_id}`)).body as any
    expect([...first.data, ...rest.data]).toEqual(all.data)
    expect((await get(`/admin/v1/accounts/${a.id}/ledger?from=1&to=2`)).body).toMatchObject({ data: [] })
    expectError(await get(`/admin/v1/accounts/acct_nope/ledger`), 404, "account_not_found")
  })
})
