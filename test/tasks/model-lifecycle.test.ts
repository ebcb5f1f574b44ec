import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createAccount, operator, type TestAccount } from "../support/adminApi.ts"
import { api } from "../support/api.ts"
import { alsoWith, unthrottled } from "../support/config.ts"
import { consoleSignIn } from "../support/consoleApi.ts"
import { backend } from "../support/database.ts"
import { ADMIN_TOKEN, startGateway, type TestGateway } from "../support/gateway.ts"
import { expectError, raw } from "../support/http.ts"
import { METRICS_TOKEN, samplesOf, scrape, valueOf } from "../support/metrics.ts"
import { videoRequest } from "../support/tasks.ts"

/**
 * Model lifecycle (docs/api.md, Model lifecycle): a deprecated model's
 * creates carry `Deprecation`, `Sunset` and `Link`; after its sunset they are
 * refused naming the successor, before any charge; an alias serves the same
 * task as the model it names.
 */
const DEPRECATED = "provy-famS-2.0-480p"
const SUCCESSOR = "provy-famS-2.5-480p"
const RETIRED = "provx-famS-720p"
const ALIAS = "famS-classic-fast"
const TARGET = "provy-famS-2.0-fast-480p"

let gw: TestGateway
let acct: TestAccount
beforeAll(async () => {
  const config = alsoWith(unthrottled(), "models.json", (models) => {
    models.models[DEPRECATED].deprecated = { since: "2026-09-01", sunset: "2099-01-01", successor: SUCCESSOR }
    models.models[RETIRED].deprecated = {
      since: "2026-01-01",
      sunset: "2026-06-01T12:00:00Z",
      successor: "provx-famS-1080p"
    }
    models.aliases = { [ALIAS]: TARGET }
  })
  gw = await startGateway({ CONFIG_DIR: config, METRICS_TOKEN })
  acct = await createAccount(gw, { name: "lifecycle", wallet_credits: 100 })
})
afterAll(() => gw?.close())

const create = (model: string) =>
  raw(gw, "POST", "/v1/video/tasks", { key: acct.model.key, json: videoRequest({ model }) })

describe(`model lifecycle (${backend})`, () => {
  it("a deprecated model's create carries Deprecation, Sunset and a Link to its successor", async () => {
    const created = await create(DEPRECATED)
    expect(created.status).toBe(202)
    expect(created.headers.get("deprecation")).toBe(`@${Date.parse("2026-09-01T00:00:00Z") / 1000}`)
    expect(created.headers.get("sunset")).toBe("Thu, 01 Jan 2099 00:00:00 GMT")
    expect(created.headers.get("link")).toBe(`</v1/models/${SUCCESSOR}>; rel="successor-version"`)
    // The link leads somewhere: the successor's entry.
    const successor = await raw(gw, "GET", `/v1/models/${SUCCESSOR}`, { key: acct.resource.key })
    expect((successor.body as any).id).toBe(SUCCESSOR)
    // A model that is not deprecated answers without them.
    const current = await create(SUCCESSOR)
    expect(["deprecation", "sunset", "link"].map((h) => current.headers.get(h))).toEqual([null, null, null])
    // /v1/models shows the dates.
    const models = (await api(gw, acct).models()).data
    expect(models.find((m) => m.id === DEPRECATED)?.deprecation).toEqual({
      since: Date.parse("2026-09-01T00:00:00Z") / 1000,
      sunset: Date.parse("2099-01-01T00:00:00Z") / 1000,
      successor: SUCCESSOR
    })
    expect(models.find((m) => m.id === SUCCESSOR)?.deprecation).toBeUndefined()
    // Counted by model, never by caller; the console names who still uses it.
    const samples = samplesOf((await scrape(gw, METRICS_TOKEN)).body)
    expect(valueOf(samples, "mtg_deprecated_model_creates_total", { kind: "video", model: DEPRECATED })).toBe(1)
    const overview = await (await consoleSignIn(gw, ADMIN_TOKEN)).call((c) => c.getOverview())
    expect(overview.deprecated_models).toEqual([
      {
        model: DEPRECATED,
        sunset: Date.parse("2099-01-01T00:00:00Z") / 1000,
        successor: SUCCESSOR,
        accounts: 1,
        tasks: 1
      }
    ])
  })

  it("after its sunset a model's create and quote are 400 naming the successor, nothing charged", async () => {
    const before = await operator(gw).account(acct.id)
    const refused = await create(RETIRED)
    expectError(refused, 400, "unsupported_video_model", "invalid_request_error")
    expect((refused.body as any).error.message).toContain("provx-famS-1080p")
    expect((refused.body as any).error.message).toContain("2026-06-01")
    const quote = await raw(gw, "POST", "/v1/video/tasks/quote", {
      key: acct.model.key,
      json: videoRequest({ model: RETIRED })
    })
    expectError(quote, 400, "unsupported_video_model")
    expect((await operator(gw).account(acct.id)).ledger.entries).toBe(before.ledger.entries)
    // No longer offered.
    expect((await api(gw, acct).models()).data.some((m) => m.id === RETIRED)).toBe(false)
    expectError(
      await raw(gw, "GET", `/v1/models/${RETIRED}`, { key: acct.resource.key }),
      400,
      "unsupported_video_model"
    )
  })

  it("an alias serves the same task as the model it names, listed beside it", async () => {
    const viaAlias = await create(ALIAS)
    expect(viaAlias.status).toBe(202)
    const task = viaAlias.body as any
    // The task is the target's: its model, its price.
    expect(task.model).toBe(TARGET)
    const direct = await create(TARGET)
    const ledger = await operator(gw).call((c) => c.admin.listLedger({ path: { id: acct.id }, urlParams: {} }))
    const charges = ledger.data.filter((l) =>
      l.kind === "charge" && [task.id, (direct.body as any).id].includes(l.task_id)
    )
    expect(charges.map((c) => c.wallet_credits)).toEqual([charges[0]!.wallet_credits, charges[0]!.wallet_credits])
    // An Idempotency-Key replay through the other name is the same request.
    const keyed = (model: string) =>
      raw(gw, "POST", "/v1/video/tasks", {
        key: acct.model.key,
        json: videoRequest({ model }),
        headers: { "idempotency-key": "alias-replay" }
      })
    const first = await keyed(ALIAS)
    const again = await keyed(TARGET)
    expect((again.body as any).id).toBe((first.body as any).id)
    expect(again.headers.get("idempotent-replayed")).toBe("true")
    const listed = (await api(gw, acct).models()).data.find((m) => m.id === ALIAS)
    expect(listed?.alias_of).toBe(TARGET)
    expect((await raw(gw, "GET", `/v1/models/${ALIAS}`, { key: acct.model.key })).body).toMatchObject({
      id: ALIAS,
      alias_of: TARGET
    })
  })
})
