import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createAccount } from "../support/adminApi.ts"
import { api } from "../support/api.ts"
import { backend } from "../support/database.ts"
import { eventually } from "../support/eventually.ts"
import { type FalSetup, startFalGateway } from "../support/fal.ts"

/**
 * fal's webhooks as an accelerator, never as truth (docs/adapters/fal.md,
 * Callbacks): with `callbacks: true` each submit carries `?fal_webhook=` with
 * the channel's callback URL; fal's ED25519-signed delivery (keys read from
 * the fake's JWKS) makes the task due for a poll at once. Polling is slowed
 * to 20 s, so a task that ends within seconds did so because fal called back;
 * a duplicated delivery changes nothing; a badly signed, stale or unsigned
 * one is refused and hastens nothing.
 */

const MODEL = "provx-famK-3.0-720p"
const SLOW_POLL_MS = 20_000
let f: FalSetup

beforeAll(async () => {
  f = await startFalGateway(
    { [MODEL]: [{ channel: "fal-market", upstream_model: "fal-ai/kling-video/v3/pro/text-to-video" }] },
    { callbacks: true },
    {},
    { poll_interval_ms: SLOW_POLL_MS }
  )
}, 60_000)
afterAll(async () => {
  await f?.close()
})

const create = async (prompt: string) => {
  const acct = await createAccount(f.gw, { name: "fal webhooks", wallet_credits: 100 })
  const body = { model: MODEL, operation: "generation", input: { prompt }, output: { duration: 5 } } as const
  const created = await api(f.gw, acct).createVideoReply(body)
  expect(created.status).toBe(202)
  return { key: acct.resource.key, id: created.task.id, at: Date.now() }
}

const deliveriesOf = (prompt: string) =>
  f.fake.deliveries.filter((d) => {
    const q = f.fake.queued.get(d.body.request_id)
    return q?.input.prompt === prompt
  })

describe(`fal webhooks with polling slowed to ${SLOW_POLL_MS / 1000} s (${backend})`, () => {
  it("a signed webhook, delivered twice, ends the task soon after; one request", async () => {
    f.fake.scenarios.push({ stepMs: 300, webhook: "duplicate" })
    const task = await create("called back")
    const seen = await api(f.gw, { resource: task.key }).waitTask("video", task.id, undefined, {
      intervalMs: 100,
      deadlineMs: 15_000
    })
    expect(seen.at(-1)?.status).toBe("succeeded")
    // Far sooner than the first scheduled poll: the webhook did it.
    expect(Date.now() - task.at).toBeLessThan(SLOW_POLL_MS / 2)
    const submits = f.fake.requests.filter((q) => q.method === "POST" && q.body?.prompt === "called back")
    expect(submits).toHaveLength(1)
    expect(submits[0]!.query["fal_webhook"]!.startsWith(`${f.gw.url}/v1/upstream-callbacks/`)).toBe(true)
    const delivered = await eventually(
      async () => (deliveriesOf("called back").length === 2 ? deliveriesOf("called back") : undefined),
      "both deliveries"
    )
    for (const d of delivered) {
      expect(d.status).toBeLessThan(300)
      expect(d.headers["x-fal-webhook-signature"]).toMatch(/^[0-9a-f]{128}$/)
    }
  }, 60_000)

  it("a badly signed, stale or unsigned webhook is refused and hastens nothing", async () => {
    for (const webhook of ["bad_signature", "stale", "unsigned"] as const) {
      const prompt = `forged ${webhook}`
      f.fake.scenarios.push({ stepMs: 100, webhook })
      const task = await create(prompt)
      // The fake tries three times on a refusal.
      const delivered = await eventually(
        async () => (deliveriesOf(prompt).length === 3 ? deliveriesOf(prompt) : undefined),
        `three refused deliveries (${webhook})`,
        { deadlineMs: 10_000 }
      )
      for (const d of delivered) expect(d.status).toBe(400)
      const now = await api(f.gw, { resource: task.key }).getVideo(task.id)
      expect(now.status).not.toBe("succeeded")
    }
  }, 60_000)
})
