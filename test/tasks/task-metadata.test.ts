import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createAccount } from "../support/adminApi.ts"
import { unthrottled } from "../support/config.ts"
import { backend } from "../support/database.ts"
import { startGateway, type TestGateway } from "../support/gateway.ts"
import { raw } from "../support/http.ts"
import { eventsOf, lastSeen, pollTask, videoRequest } from "../support/tasks.ts"

/**
 * `metadata` is an object in every task object, `{}` when the caller sent none
 * (docs/api.md, Lists): the create answer, a query, a list, a batch query and
 * the webhook event all carry it. Read raw: what the wire carries is the
 * point (a decoder could fill in a missing field).
 */

type Wire = { readonly id: string; readonly metadata: unknown }
type WireList = { readonly data: ReadonlyArray<Wire> }

let gw: TestGateway
beforeAll(async () => {
  gw = await startGateway({ CONFIG_DIR: unthrottled(), ROLE: "all" })
})
afterAll(() => gw?.close())

const kinds = [
  {
    kind: "video" as const,
    request: videoRequest({ provider_options: { sandbox: { outcome: "fail" } } })
  },
  {
    kind: "image" as const,
    request: {
      model: "provy-image-1-fast",
      operation: "generation",
      input: { prompt: "a kite" },
      output: { size: "512x512" }
    }
  }
]

describe(`metadata in task objects (${backend})`, () => {
  it.each(kinds)(
    "$kind: {} when none was sent, in create, query, list, batch and the webhook event",
    async ({ kind, request }) => {
      const acct = await createAccount(gw, { name: `meta-${kind}`, wallet_credits: 100 })
      const created = await raw(gw, "POST", `/v1/${kind}/tasks`, { key: acct.model.key, json: request })
      expect(created.status).toBe(202)
      expect((created.body as Wire).metadata).toEqual({})
      const id = (created.body as Wire).id

      const done = lastSeen(await pollTask(gw, acct.resource.key, id, undefined, { kind }))
      expect(done.metadata).toEqual({})
      const list = await raw(gw, "GET", `/v1/${kind}/tasks`, { key: acct.resource.key })
      expect((list.body as WireList).data.map((t) => [t.id, t.metadata])).toEqual([[id, {}]])
      const batch = await raw(gw, "POST", `/v1/${kind}/tasks/query`, {
        key: acct.resource.key,
        json: { task_ids: [id] }
      })
      expect((batch.body as WireList).data.map((t) => t.metadata)).toEqual([{}])
      const [event] = await eventsOf(gw, id)
      expect(event!.payload.data.object).toEqual(done)
    }
  )
})
