import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { backend } from "../support/database.ts"
import { startGateway, type TestGateway } from "../support/gateway.ts"
import { call, createAccount, expectError } from "../support/http.ts"
import { videoRequest } from "../support/tasks.ts"

/** The console's Cancel button's endpoint: the session's account only, CSRF-checked, the API's cancel. */
let gw: TestGateway
beforeAll(async () => {
  gw = await startGateway()
})
afterAll(() => gw?.close())

const signIn = async (key: string) => {
  const reply = await call(gw, "POST", "/console/api/session", { json: { key } })
  const cookie = (reply.headers.get("set-cookie") ?? "").split(";")[0]!
  return { cookie, csrf: reply.body.csrf_token as string }
}

describe(`console cancel (${backend})`, () => {
  it("cancels a queued task of the signed-in account, refunded; again answers it; CSRF and other accounts refused", async () => {
    const acme = await createAccount(gw, { name: "acme", wallet_credits: 100 })
    const other = await createAccount(gw, { name: "other", wallet_credits: 100 })
    const created = await call(gw, "POST", "/v1/video/tasks", { key: acme.model.key, json: videoRequest() })
    const theirs = await call(gw, "POST", "/v1/video/tasks", { key: other.model.key, json: videoRequest() })
    const owner = await signIn(acme.resource.key)
    const path = `/console/api/tasks/${created.body.id}/cancel`

    expect((await call(gw, "POST", path, { headers: { cookie: owner.cookie } })).status).toBe(403)
    const headers = { cookie: owner.cookie, "x-csrf-token": owner.csrf }
    expectError(
      await call(gw, "POST", `/console/api/tasks/${theirs.body.id}/cancel`, { headers }),
      404,
      "task_not_found"
    )
    const cancelled = await call(gw, "POST", path, { headers })
    expect(cancelled.status).toBe(200)
    expect(cancelled.body).toMatchObject({ id: created.body.id, status: "failed", error: { code: "task_cancelled" } })
    expect((await call(gw, "POST", path, { headers })).body).toEqual(cancelled.body)

    const detail = await call(gw, "GET", `/console/api/tasks/${created.body.id}`, { headers: { cookie: owner.cookie } })
    expect(detail.body.task).toEqual(cancelled.body)
    expect(detail.body.ledger.map((l: any) => l.kind).sort()).toEqual(["charge", "refund"])
    // The other account's task is untouched.
    const untouched = await call(gw, "GET", `/v1/video/tasks/${theirs.body.id}`, { key: other.resource.key })
    expect(untouched.body.status).toBe("queued")
  })
})
