import { afterAll, beforeAll, describe, it } from "vitest"
import { createAccount } from "../support/adminApi.ts"
import { backend } from "../support/database.ts"
import { startGateway, type TestGateway } from "../support/gateway.ts"
import { expectError, raw, rawAdmin } from "../support/http.ts"

/**
 * An id of any length in a path names no resource: 404 with the resource's
 * code and the spec's body, after authentication, never 405 (the router once
 * missed path parameters over 100 characters and the miss looked like a
 * wrong method).
 */

let gw: TestGateway
beforeAll(async () => {
  gw = await startGateway()
})
afterAll(() => gw?.close())

const LENGTHS = [101, 5000]

describe(`over-long ids in paths (${backend})`, () => {
  it.each(LENGTHS)("video and image task ids of %i characters: 404 task_not_found", async (length) => {
    const acct = await createAccount(gw)
    const id = `task_${"x".repeat(length)}`
    for (const kind of ["video", "image"]) {
      const reply = await raw(gw, "GET", `/v1/${kind}/tasks/${id}`, { key: acct.resource.key })
      expectError(reply, 404, "task_not_found", "not_found_error")
      // Without a key the answer is still about the key.
      expectError(await raw(gw, "GET", `/v1/${kind}/tasks/${id}`), 401, "invalid_api_key")
    }
  })

  it.each(LENGTHS)("asset, account and key ids of %i characters: 404 with their codes", async (length) => {
    const acct = await createAccount(gw)
    const long = "y".repeat(length)
    expectError(
      await raw(gw, "GET", `/v1/assets/asset_${long}/content`, { key: acct.resource.key }),
      404,
      "asset_not_found"
    )
    expectError(await rawAdmin(gw, "GET", `/admin/v1/accounts/acct_${long}`), 404, "account_not_found")
    expectError(
      await rawAdmin(gw, "POST", `/admin/v1/accounts/acct_${long}/credits`, { wallet: 1 }),
      404,
      "account_not_found"
    )
    expectError(await rawAdmin(gw, "POST", `/admin/v1/keys/key_${long}/disable`), 404, "key_not_found")
  })

  it("a known path with another method is still 405", async () => {
    const reply = await raw(gw, "DELETE", `/v1/video/tasks/task_${"x".repeat(5000)}`)
    expectError(reply, 405, "method_not_allowed")
  })
})
