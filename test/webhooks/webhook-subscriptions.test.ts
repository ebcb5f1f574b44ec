import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { createAccount, operator } from "../support/adminApi.ts"
import { api } from "../support/api.ts"
import { unthrottled } from "../support/config.ts"
import { consoleSignIn } from "../support/consoleApi.ts"
import { backend } from "../support/database.ts"
import { eventually, sleep } from "../support/eventually.ts"
import { startGateway, type TestGateway } from "../support/gateway.ts"
import { type Receiver, startReceiver, verifyStandardWebhook } from "../support/receiver.ts"
import { videoRequest } from "../support/tasks.ts"

/**
 * Webhook subscriptions (docs/webhooks.md): a webhook receives only the event
 * types it names (the others recorded `filtered`); one whose deliveries keep
 * failing past `WEBHOOK_DISABLE_AFTER_S` is disabled with its reason, its
 * events held and delivered, same ids, once it is enabled again; a window of
 * events can be replayed with the same ids. Deliveries are retried every
 * half second here, and a webhook is disabled after 2 s of failures.
 */

let gw: TestGateway
let hook: Receiver
// What the receiver answers: a test flips it to make deliveries fail or get through.
let answer = 200
beforeAll(async () => {
  hook = await startReceiver(() => answer)
  gw = await startGateway({
    CONFIG_DIR: unthrottled(),
    ROLE: "all",
    WEBHOOK_RETRY_INTERVAL_S: "0.5",
    WEBHOOK_MAX_ATTEMPTS: "100",
    WEBHOOK_DISABLE_AFTER_S: "2"
  })
})
afterAll(async () => {
  await gw?.close()
  await hook?.close()
})
afterEach(() => {
  answer = 200
})

const eventIds = (type?: string) =>
  hook.receipts.filter((r) => type === undefined || r.json?.type === type).map((r) => r.json?.id as string)

const run = async (acct: Awaited<ReturnType<typeof createAccount>>, outcome: "succeed" | "fail") => {
  const task = await api(gw, acct).createVideo(videoRequest({ provider_options: { sandbox: { outcome } } }))
  await api(gw, acct).waitTask("video", task.id)
  return task.id
}

const eventsOf = async (accountId: string) => (await operator(gw).webhookEvents(accountId, { limit: 100 })).data

describe(`webhook subscriptions (${backend})`, () => {
  it("a webhook that names its events receives only those; the others are recorded filtered", async () => {
    const acct = await createAccount(gw, { name: "picky", wallet_credits: 100 })
    const set = await operator(gw).setWebhook(acct.id, { url: hook.url, events: ["video.task.failed"] })
    expect(set.events).toEqual(["video.task.failed"])
    const failed = await run(acct, "fail")
    const succeeded = await run(acct, "succeed")
    await eventually(
      async () => (await eventsOf(acct.id)).every((e) => e.status !== "pending"),
      "both events settled"
    )
    const events = await eventsOf(acct.id)
    const byTask = new Map(events.map((e) => [e.task_id, e]))
    expect(byTask.get(failed)).toMatchObject({ type: "video.task.failed", status: "delivered" })
    expect(byTask.get(succeeded)).toMatchObject({ type: "video.task.succeeded", status: "filtered" })
    expect(byTask.get(succeeded)!.attempts).toEqual([])
    const received = hook.receipts.filter((r) =>
      r.json?.data?.object?.id === succeeded || r.json?.data?.object?.id === failed
    )
    expect(received.map((r) => verifyStandardWebhook(r, set.key).type)).toEqual(["video.task.failed"])
    // The test event goes whatever the subscription.
    const test = await operator(gw).testWebhook(acct.id)
    await eventually(() => eventIds("webhook.test").includes(test.event_id), "the test event")
  })

  it(
    "deliveries failing past the limit disable the webhook with its reason; enabled again, the held events go with their ids",
    async () => {
      const acct = await createAccount(gw, { name: "flaky", wallet_credits: 100 })
      await operator(gw).setWebhook(acct.id, { url: hook.url })
      answer = 503
      const first = await run(acct, "succeed")
      await eventually(
        async () => (await operator(gw).account(acct.id)).webhook?.enabled === false,
        "the webhook disabled",
        { deadlineMs: 30_000 }
      )
      const account = await operator(gw).account(acct.id)
      expect(account.webhook?.disabled_reason).toMatch(/deliveries have failed since .* with no success/)
      const session = await consoleSignIn(gw, acct.resource.key)
      const shown = await session.call((c) => c.getWebhook())
      expect(shown).toMatchObject({ enabled: false, disabled_reason: account.webhook?.disabled_reason })
      // Disabled: a new event is held, not sent, not lost.
      const second = await run(acct, "fail")
      await eventually(async () => {
        const events = await eventsOf(acct.id)
        return events.filter((e) => e.task_id === first || e.task_id === second).every((e) => e.status === "held")
      }, "both events held")
      const held = (await eventsOf(acct.id)).filter((e) => e.status === "held").map((e) => e.id)
      expect(held).toHaveLength(2)
      // No attempt goes to a disabled webhook (a period in which nothing may happen).
      const before = hook.receipts.length
      await sleep(1_500)
      expect(hook.receipts.length).toBe(before)

      answer = 200
      const enabled = await operator(gw).setWebhook(acct.id, { url: hook.url, enabled: true })
      expect(enabled).toMatchObject({ enabled: true, disabled_reason: null })
      await eventually(() => held.every((id) => eventIds().includes(id)), "the held events delivered")
      const events = await eventsOf(acct.id)
      expect(events.filter((e) => held.includes(e.id)).map((e) => e.status)).toEqual(["delivered", "delivered"])
      expect((await operator(gw).account(acct.id)).webhook?.disabled_reason).toBeUndefined()
    },
    90_000
  )

  it("a window of events is replayed with the same ids, from the admin API and the console", async () => {
    const acct = await createAccount(gw, { name: "replay", wallet_credits: 100 })
    await operator(gw).setWebhook(acct.id, { url: hook.url })
    const from = Math.floor(Date.now() / 1000) - 1
    await run(acct, "succeed")
    await run(acct, "fail")
    await eventually(
      async () => (await eventsOf(acct.id)).filter((e) => e.status === "delivered").length === 2,
      "two events delivered"
    )
    const ids = (await eventsOf(acct.id)).map((e) => e.id)
    const replayed = await operator(gw).call((c) =>
      c.adminWebhooks.replayWebhookEvents({ path: { id: acct.id }, payload: { from, to: from + 600 } })
    )
    expect(replayed).toMatchObject({ object: "webhook.replay.queued", events: 2 })
    await eventually(() => ids.every((id) => eventIds().filter((e) => e === id).length === 2), "each sent twice")
    // The console's owner replays a window too; an empty one queues nothing.
    const session = await consoleSignIn(gw, acct.resource.key)
    const again = await session.call((c) => c.replayWebhookEvents({ payload: { from, to: from + 600 } }))
    expect(again.events).toBe(2)
    const none = await session.call((c) => c.replayWebhookEvents({ payload: { from: 1, to: 2 } }))
    expect(none.events).toBe(0)
    await eventually(() => ids.every((id) => eventIds().filter((e) => e === id).length === 3), "each sent thrice")
  }, 90_000)
})
