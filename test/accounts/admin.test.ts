import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { adminApi, createAccount, operator } from "../support/adminApi.ts"
import { backend } from "../support/database.ts"
import { startGateway, type TestGateway } from "../support/gateway.ts"
import { expectError, raw, rawAdmin } from "../support/http.ts"

let gw: TestGateway
beforeAll(async () => {
  gw = await startGateway()
})
afterAll(() => gw?.close())

describe(`admin API (${backend})`, () => {
  it("creates an account with balances and a group, and reads it back", async () => {
    const created = await adminApi(gw)((c) =>
      c.admin.createAccount({
        payload: { name: "Acme", group: "vip", wallet_credits: 12.5, subscription_credits: 3 },
        withResponse: true
      })
    ).then(([account, response]) => ({ account, status: response.status }))
    expect(created.status).toBe(201)
    expect(created.account).toMatchObject({
      object: "account",
      name: "Acme",
      group: "vip",
      wallet_credits: 12.5,
      subscription_credits: 3,
      webhook: null
    })
    expect(created.account.id).toMatch(/^acct_[0-9A-Za-z]{22}$/)

    const read = await operator(gw).account(created.account.id)
    expect(read).toMatchObject({ id: created.account.id, wallet_credits: 12.5, subscription_credits: 3, keys: [] })
    expect(read.ledger).toEqual({ credited: 15.5, charged: 0, refunded: 0, entries: 1 })
  })

  it("defaults the group from config/groups.json and refuses an unknown group", async () => {
    const created = await adminApi(gw)((c) => c.admin.createAccount({ payload: { name: "Plain" } }))
    expect(created.group).toBe("default")
    expectError(await rawAdmin(gw, "POST", "/admin/v1/accounts", { name: "X", group: "gold" }), 400, "invalid_request")
  })

  it("issues keys shown once, stores only their hash, and a disabled key gets 401", async () => {
    const { id, model, resource } = await createAccount(gw)
    expect(model.key).toMatch(/^sk-[0-9A-Za-z]{33}$/)
    expect(resource.key).toMatch(/^ak_[0-9A-Za-z]{33}$/)
    expect(model).toMatchObject({ object: "api_key", kind: "model", account_id: id, group: null })

    // Read raw: no field of the answer on the wire may carry the key.
    const detail = await rawAdmin(gw, "GET", `/admin/v1/accounts/${id}`)
    expect((detail.body as { keys: Array<unknown> }).keys).toHaveLength(2)
    expect(JSON.stringify(detail.body)).not.toContain(model.key)

    // The key works until it is disabled.
    expectError(await raw(gw, "GET", "/v1/video/tasks/task_x", { key: resource.key }), 404, "task_not_found")
    const disabled = await adminApi(gw)((c) => c.admin.disableKey({ path: { key_id: resource.id } }))
    expect(disabled).toMatchObject({ id: resource.id, disabled: true })
    expectError(
      await raw(gw, "GET", "/v1/video/tasks/task_x", { key: resource.key }),
      401,
      "invalid_api_key",
      "authentication_error"
    )
    // The other key of the account is unaffected.
    expectError(await raw(gw, "POST", "/v1/video/tasks", { key: model.key, json: {} }), 400, "invalid_request")
  })

  it("a key may carry its own group", async () => {
    const { id } = await createAccount(gw)
    const key = await adminApi(gw)((c) => c.admin.createKey({ path: { id }, payload: { kind: "model", group: "vip" } }))
    expect(key.group).toBe("vip")
    expectError(await rawAdmin(gw, "POST", `/admin/v1/accounts/${id}/keys`, { kind: "admin" }), 400, "invalid_request")
  })

  it("adds and removes credits, never below zero, and records each in the ledger", async () => {
    const { id } = await createAccount(gw, { name: "credits", wallet_credits: 10 })
    const added = await operator(gw).addCredits(id, { wallet: 5.25, subscription: 2 })
    expect(added).toEqual({ object: "balances", account_id: id, wallet_credits: 15.25, subscription_credits: 2 })
    const removed = await operator(gw).addCredits(id, { wallet: -15.25 })
    expect(removed.wallet_credits).toBe(0)
    expectError(
      await rawAdmin(gw, "POST", `/admin/v1/accounts/${id}/credits`, { wallet: -0.000001 }),
      400,
      "invalid_request"
    )
    const detail = await operator(gw).account(id)
    expect(detail.ledger).toEqual({ credited: 2, charged: 0, refunded: 0, entries: 3 })
  })

  it("configures the webhook, rotates its key and queues a test event", async () => {
    const { id, model } = await createAccount(gw)
    expectError(await rawAdmin(gw, "POST", `/admin/v1/accounts/${id}/webhook/test`), 400, "webhook_not_configured")
    const ops = operator(gw)
    const set = await ops.setWebhook(id, { url: "http://127.0.0.1:9/hook" })
    expect(set).toMatchObject({ url: "http://127.0.0.1:9/hook", enabled: true })
    expect(set.key).toMatch(/^wk-[0-9A-Za-z]{33}$/)

    // Setting it again keeps the key; rotating replaces it.
    const again = await ops.setWebhook(id, { url: "https://example.com/h", enabled: false })
    expect(again).toEqual({
      url: "https://example.com/h",
      enabled: false,
      key: set.key,
      events: null,
      disabled_reason: null,
      disabled_at: null
    })
    const rotated = await ops.rotateWebhookKey(id)
    expect(rotated.key).toMatch(/^wk-/)
    expect(rotated.key).not.toBe(set.key)

    // A webhook key is never an API credential; the old one is not even recognised.
    expectError(await raw(gw, "GET", "/v1/video/tasks/t", { key: rotated.key }), 403, "permission_denied")
    expectError(await raw(gw, "GET", "/v1/video/tasks/t", { key: set.key }), 401, "invalid_api_key")
    expect(model.key).toBeDefined()

    const test = await ops.testWebhook(id)
    expect(test.event_id).toMatch(/^evt_/)
  })

  it("refuses webhook URLs that are not http(s)", async () => {
    const { id } = await createAccount(gw)
    for (const url of ["ftp://example.com/x", "not a url", "http://user:pw@example.com/"]) {
      expectError(await rawAdmin(gw, "PUT", `/admin/v1/accounts/${id}/webhook`, { url }), 400, "invalid_request")
    }
  })

  it("answers 404 for unknown accounts and keys", async () => {
    expectError(await rawAdmin(gw, "GET", "/admin/v1/accounts/acct_nope"), 404, "account_not_found", "not_found_error")
    expectError(await rawAdmin(gw, "POST", "/admin/v1/keys/key_nope/disable"), 404, "key_not_found")
    expectError(
      await rawAdmin(gw, "POST", "/admin/v1/accounts/acct_nope/keys", { kind: "model" }),
      404,
      "account_not_found"
    )
  })

  it("requires the admin token", async () => {
    const { model } = await createAccount(gw)
    expectError(await raw(gw, "POST", "/admin/v1/accounts", { json: { name: "x" } }), 401, "invalid_api_key")
    expectError(await raw(gw, "GET", "/admin/v1/accounts/acct_x", { key: "wrong" }), 401, "invalid_api_key")
    expectError(await raw(gw, "GET", "/admin/v1/accounts/acct_x", { key: model.key }), 401, "invalid_api_key")
  })
})
