import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createAccount, operator } from "../support/adminApi.ts"
import { type Api, api } from "../support/api.ts"
import { ARK_KEY, type ArkSetup, startArkGateway, UPSTREAM } from "../support/ark.ts"
import { backend } from "../support/database.ts"
import { eventually } from "../support/eventually.ts"
import { expectError, raw, rawAdmin } from "../support/http.ts"
import { videoRequest } from "../support/tasks.ts"

/**
 * What an operator sees and steers of one channel, against the fake Ark: a
 * key Ark refuses shows as Ark's own 401 and code in the task's attempts and
 * in the channel view, and the check names it, while the caller sees only
 * the spec's neutral failure; a draining channel takes no new task but still
 * polls and finishes the one already upstream.
 */

const WRONG = "provy-famS-2.0-480p"
const MAIN = "provy-famS-2.0-720p"
const HANDED = "provy-famS-2.0-fast-480p"

let ark: ArkSetup
let key: string
let accountId: string
let resourceKey: string
let caller: Api

beforeAll(async () => {
  ark = await startArkGateway({
    [WRONG]: [{ channel: "byteplus-wrong", upstream_model: UPSTREAM }],
    [MAIN]: [{ channel: "byteplus", upstream_model: UPSTREAM }],
    [HANDED]: [{ channel: "byteplus-one", upstream_model: UPSTREAM }, "sandbox"]
  }, {
    "byteplus-wrong": { credentials: { api_key: { env: "ARK_WRONG_KEY" } } },
    "byteplus-one": { concurrency: 1 }
  })
  const account = await createAccount(ark.gw, { name: "operator-view", wallet_credits: 1000 })
  key = account.model.key
  accountId = account.id
  resourceKey = account.resource.key
  caller = api(ark.gw, account)
}, 60_000)
afterAll(async () => {
  await ark?.close()
})

const create = (model: string, prompt: string) => caller.createVideoReply(videoRequest({ model, input: { prompt } }))

/** The same create over the wire, for the refusal's error body. */
const createRaw = (model: string, prompt: string) =>
  raw(ark.gw, "POST", "/v1/video/tasks", { key, json: videoRequest({ model, input: { prompt } }) })

const task = (id: string) => caller.getVideo(id)

describe(`channel operations against the fake Ark (${backend})`, () => {
  it("a wrong key: Ark's 401 and code in the task's attempts and the channel view, the check says so; the caller sees neither", async () => {
    const created = await create(WRONG, "a key Ark refuses")
    expect(created.status).toBe(202)
    await eventually(async () => (await task(created.task.id)).status === "failed", "the task fails")
    // What the caller sees, every field of the answer as sent.
    const failed = await raw(ark.gw, "GET", `/v1/video/tasks/${created.task.id}`, { key: resourceKey })
    expect(failed.status).toBe(200)
    expect(JSON.stringify(failed.body)).not.toMatch(/AuthenticationError|API key is invalid|401|byteplus/i)

    const view = await operator(ark.gw).task(created.task.id)
    expect(view.channels_tried).toEqual(["byteplus-wrong"])
    expect(view.attempts).toMatchObject([{
      channel: "byteplus-wrong",
      outcome: "refused",
      upstream: { status: 401, code: "AuthenticationError", message: expect.stringContaining("the API key is invalid") }
    }])

    const channel = await operator(ark.gw).channel("byteplus-wrong")
    expect(channel).toMatchObject({
      object: "channel",
      name: "byteplus-wrong",
      adapter: "ark",
      base_url: ark.fake.url,
      state: "enabled",
      last_upstream_error: { status: 401, code: "AuthenticationError" }
    })
    expect(channel.last_15_minutes.submitted).toBeGreaterThanOrEqual(1)
    expect(channel.last_15_minutes.failed).toBeGreaterThanOrEqual(1)
    // Nothing of the key in the answer as sent, whatever its fields.
    const sent = await rawAdmin(ark.gw, "GET", "/admin/v1/channels/byteplus-wrong")
    expect(sent.status).toBe(200)
    expect(JSON.stringify(sent.body)).not.toContain(ARK_KEY)

    const checked = await operator(ark.gw).checkChannel("byteplus-wrong")
    expect(checked).toMatchObject({ ok: false, result: "credentials_refused" })
    expect(checked.detail).toContain("AuthenticationError")
    expect(await operator(ark.gw).checkChannel("byteplus")).toMatchObject({ result: "ok" })
  })

  it("draining: no new task (503, nothing charged), the one already upstream is still polled and succeeds", async () => {
    ark.fake.scenarios.push({ queued: 1, running: 1, stepMs: 1500 })
    const created = await create(MAIN, "upstream before the drain")
    expect(created.status).toBe(202)
    await eventually(async () => {
      const view = await operator(ark.gw).task(created.task.id)
      return view.engine.upstream_id !== null ? view : undefined
    }, "the task is upstream")

    const drained = await operator(ark.gw).setChannelState("byteplus", "drain", "maintenance")
    expect(drained).toMatchObject({ state: "draining", reason: "maintenance", in_flight: 1 })
    const wallet = async () => (await operator(ark.gw).account(accountId)).wallet_credits
    const before = await wallet()
    expectError(await createRaw(MAIN, "refused while draining"), 503, "model_unavailable", "api_error")
    expect(await wallet()).toBe(before)

    const done = await eventually(async () => {
      const read = await task(created.task.id)
      return read.status === "succeeded" ? read : undefined
    }, "the task upstream finishes while the channel drains")
    expect(done.status).toBe("succeeded")
    const list = await operator(ark.gw).channels()
    expect(list.object).toBe("list")
    expect(list.data.find((c) => c.name === "byteplus")).toMatchObject({ state: "draining", in_flight: 0 })

    expect((await operator(ark.gw).setChannelState("byteplus", "enable")).state).toBe("enabled")
    const after = await create(MAIN, "after the drain")
    expect(after.status).toBe(202)
    // Its create reaches Ark before the next test scripts Ark's next task.
    await eventually(async () => {
      const read = await task(after.task.id)
      return read.status === "succeeded" ? read : undefined
    }, "the task after the drain succeeds")
  })

  it("disabled: a task queued on the channel goes on to the model's next channel as failover; the one upstream is still polled", async () => {
    // The channel's one slot is held by a task Ark keeps queued; the next task waits in the queue.
    ark.fake.scenarios.push({ queued: Infinity })
    const holding = (await create(HANDED, "holds the only slot")).task
    await eventually(
      async () => {
        const view = await operator(ark.gw).task(holding.id)
        return view.engine.upstream_id !== null ? view : undefined
      },
      "the first task is upstream",
      { deadlineMs: 10_000 }
    )
    const queued = (await create(HANDED, "queued behind it")).task
    expect((await operator(ark.gw).task(queued.id)).engine).toMatchObject({
      channel: "byteplus-one",
      run_state: "available"
    })

    expect((await operator(ark.gw).setChannelState("byteplus-one", "disable")).state).toBe("disabled")
    const done = await eventually(
      async () => {
        const read = await task(queued.id)
        return read.status === "succeeded" ? read : undefined
      },
      "the queued task runs on the next channel",
      { deadlineMs: 10_000 }
    )
    expect(done.status).toBe("succeeded")
    const view = await operator(ark.gw).task(queued.id)
    expect(view.channels_tried).toEqual(["byteplus-one", "sandbox"])
    expect(view.attempts).toMatchObject([
      {
        channel: "byteplus-one",
        outcome: "failover",
        last_answer: { skipped: "channel disabled", next_channel: "sandbox" }
      },
      { channel: "sandbox", outcome: "succeeded" }
    ])
    // The task upstream stays on the disabled channel, waiting for its next poll (the poller's backoff spaces them).
    const holdingView = await operator(ark.gw).task(holding.id)
    expect(holdingView.engine.channel, JSON.stringify(holdingView)).toBe("byteplus-one")
    expect(["waiting", "polling"], JSON.stringify(holdingView)).toContain(holdingView.engine.run_state)
    expect(holdingView.engine.polls).toBeGreaterThanOrEqual(1)
    expect(await operator(ark.gw).channel("byteplus-one")).toMatchObject({
      state: "disabled",
      in_flight: 1,
      waiting: 0
    })
  })
})
