import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createAccount } from "../support/adminApi.ts"
import { api } from "../support/api.ts"
import { backend } from "../support/database.ts"
import { type ReplicateSetup, startReplicateGateway } from "../support/replicate.ts"

/**
 * Replicate's webhooks as an accelerator, never as truth
 * (docs/adapters/replicate.md, Webhooks): with `callbacks: true` each create
 * carries the channel's callback URL and asks for the `completed` event only;
 * the signed webhook (secret read from the fake's `webhooks/default/secret`)
 * makes the task due for a poll at once. Polling is slowed to 20 s, so a task
 * that ends within seconds did so because Replicate called back; duplicated
 * deliveries change nothing, a forged signature is refused.
 */

const MODEL = "provx-famK-3.0-720p"
const SLOW_POLL_MS = 20_000
let r: ReplicateSetup

beforeAll(async () => {
  r = await startReplicateGateway(
    { [MODEL]: [{ channel: "marketplace", upstream_model: "kwaivgi/kling-v3-video" }] },
    { callbacks: true },
    {},
    { poll_interval_ms: SLOW_POLL_MS }
  )
}, 60_000)
afterAll(async () => {
  await r?.close()
})

const create = async (prompt: string) => {
  const acct = await createAccount(r.gw, { name: "webhooks", wallet_credits: 100 })
  const body = { model: MODEL, operation: "generation", input: { prompt }, output: { duration: 5 } } as const
  const created = await api(r.gw, acct).createVideoReply(body)
  expect(created.status).toBe(202)
  return { key: acct.resource.key, id: created.task.id, at: Date.now() }
}

describe(`replicate webhooks with polling slowed to ${SLOW_POLL_MS / 1000} s (${backend})`, () => {
  it("a signed completed webhook, delivered twice, ends the task soon after; one prediction", async () => {
    r.fake.webhooks.options.delivery = "duplicate"
    r.fake.scenarios.push({ stepMs: 300 })
    const task = await create("called back")
    const seen = await api(r.gw, { resource: task.key }).waitTask("video", task.id, undefined, {
      intervalMs: 100,
      deadlineMs: 15_000
    })
    expect(seen.at(-1)?.status).toBe("succeeded")
    // Far sooner than the first scheduled poll: the webhook did it.
    expect(Date.now() - task.at).toBeLessThan(SLOW_POLL_MS / 2)
    const creates = r.fake.requests.filter((q) => q.method === "POST" && q.body?.input?.prompt === "called back")
    expect(creates).toHaveLength(1)
    expect(creates[0]!.body.webhook.startsWith(`${r.gw.url}/v1/upstream-callbacks/`)).toBe(true)
    expect(creates[0]!.body.webhook_events_filter).toEqual(["completed"])
    const delivered = r.fake.webhooks.delivered.filter((d) => d.body.input.prompt === "called back")
    expect(delivered).toHaveLength(2)
    for (const d of delivered) {
      expect(d.status).toBe(204)
      expect(d.headers["webhook-signature"]).toMatch(/^v1,/)
    }
    expect(r.fake.requests.filter((q) => q.path === "/v1/webhooks/default/secret").length).toBe(1)
  }, 60_000)

  it("a webhook with a forged signature is refused and hastens nothing", async () => {
    r.fake.webhooks.options.delivery = "each"
    r.fake.webhooks.options.signature = "invalid"
    try {
      r.fake.scenarios.push({ stepMs: 100 })
      const task = await create("forged")
      const until = Date.now() + 10_000
      // The emitter tries three times on a refusal.
      while (r.fake.webhooks.delivered.filter((d) => d.body.input.prompt === "forged").length < 3) {
        if (Date.now() > until) throw new Error("the webhooks never arrived")
        await new Promise((done) => setTimeout(done, 50))
      }
      for (const d of r.fake.webhooks.delivered.filter((d) => d.body.input.prompt === "forged")) {
        expect(d.status).toBeGreaterThanOrEqual(400)
      }
      const now = await api(r.gw, { resource: task.key }).getVideo(task.id)
      expect(now.status).not.toBe("succeeded")
    } finally {
      r.fake.webhooks.options.signature = "valid"
    }
  }, 60_000)
})
