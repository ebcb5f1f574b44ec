import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createAccount } from "../support/adminApi.ts"
import { api } from "../support/api.ts"
import { consoleSignIn } from "../support/consoleApi.ts"
import { backend } from "../support/database.ts"
import { startGateway, type TestGateway } from "../support/gateway.ts"
import { expectError, raw } from "../support/http.ts"
import { videoRequest } from "../support/tasks.ts"

/** The console's Cancel button's endpoint: the session's account only, CSRF-checked, the API's cancel. */
let gw: TestGateway
beforeAll(async () => {
  gw = await startGateway()
})
afterAll(() => gw?.close())

describe(`console cancel (${backend})`, () => {
  it("cancels a queued task of the signed-in account, refunded; again answers it; CSRF and other accounts refused", async () => {
    const acme = await createAccount(gw, { name: "acme", wallet_credits: 100 })
    const other = await createAccount(gw, { name: "other", wallet_credits: 100 })
    const created = await api(gw, acme).createVideo(videoRequest())
    const theirs = await api(gw, other).createVideo(videoRequest())
    const owner = await consoleSignIn(gw, acme.resource.key)
    const path = `/console/api/tasks/${created.id}/cancel`

    expect((await raw(gw, "POST", path, { headers: { cookie: owner.cookie } })).status).toBe(403)
    const headers = { cookie: owner.cookie, "x-csrf-token": owner.csrf }
    expectError(
      await raw(gw, "POST", `/console/api/tasks/${theirs.id}/cancel`, { headers }),
      404,
      "task_not_found"
    )
    const cancelled = await owner.call((c) => c.cancelTask({ path: { id: created.id } }))
    expect(cancelled).toMatchObject({ id: created.id, status: "failed", error: { code: "task_cancelled" } })
    expect(await owner.call((c) => c.cancelTask({ path: { id: created.id } }))).toEqual(cancelled)

    const detail = await owner.call((c) => c.getTask({ path: { id: created.id } }))
    expect(detail.task).toEqual(cancelled)
    expect(detail.ledger.map((l) => l.kind).sort()).toEqual(["charge", "refund"])
    // The other account's task is untouched.
    const untouched = await api(gw, other).getVideo(theirs.id)
    expect(untouched.status).toBe("queued")
  })
})
