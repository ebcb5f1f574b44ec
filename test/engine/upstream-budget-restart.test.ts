import { rmSync } from "node:fs"
import { afterAll, describe, expect, it } from "vitest"
import { type FakeArk, startFakeArk } from "../fakes/ark.ts"
import { createAccount, operator } from "../support/adminApi.ts"
import { api } from "../support/api.ts"
import { ARK_KEY, UPSTREAM } from "../support/ark.ts"
import { configWith } from "../support/config.ts"
import { backend } from "../support/database.ts"
import { eventually } from "../support/eventually.ts"
import { startGateway, type TestGateway } from "../support/gateway.ts"
import { lastSeen, pollTask, videoRequest } from "../support/tasks.ts"
import { quickEngine } from "../support/upstream.ts"

/**
 * A submit that waits for its slot in the channel's request budget has sent
 * nothing (docs/engine.md, States: `pacing`). Stopped then, its task leaves
 * nothing in doubt: the next attempt submits it, even on an upstream whose
 * adapter cannot look for a task an earlier attempt may have made (Ark),
 * where a submit in doubt fails the task with its refund.
 */

const MODEL = "provy-famS-2.0-480p"
const TASKS = 3

let fake: FakeArk | undefined
let gw: TestGateway | undefined
let config: string | undefined
afterAll(async () => {
  await gw?.close()
  await fake?.close()
  if (config !== undefined) rmSync(config, { recursive: true, force: true })
})

describe(`a submit waiting for its slot (${backend})`, () => {
  it("stopped while waiting, its task is submitted by the next attempt, once", async () => {
    fake = await startFakeArk([ARK_KEY])
    config = configWith("models.json", (models) => {
      models.channels.byteplus = {
        adapter: "ark",
        base_url: fake!.url,
        credentials: { api_key: { env: "ARK_KEY" } },
        concurrency: 10,
        timeouts: { submit_s: 5, poll_s: 2 },
        // A create every 2 s or so: the second and third wait. Stopping does not wait for their slots
        // (a submit let go on its way while stopping would be cut mid-request, in doubt).
        requests_per_second: 0.5,
        create_share: 0.2
      }
      models.models[MODEL].channels = [{ channel: "byteplus", upstream_model: UPSTREAM }]
    })
    quickEngine(config)
    const env = { ROLE: "all", CONFIG_DIR: config, ARK_KEY }
    gw = await startGateway(env)
    const acct = await createAccount(gw, { name: "paced", wallet_credits: 100 })
    const ids: Array<string> = []
    for (let i = 0; i < TASKS; i++) {
      ids.push((await api(gw, acct).createVideo(videoRequest({ model: MODEL, input: { prompt: `pier ${i}` } }))).id)
    }
    // The first create went out; the others wait for their slots.
    await eventually(() => fake!.requests.filter((r) => r.method === "POST").length === 1, "the first create")
    const pacing = await eventually(async () => {
      const views = await Promise.all(ids.map(async (id) => ({ id, view: await operator(gw!).task(id) })))
      const waiting = views.filter(({ view }) => view.attempts.at(-1)?.outcome === "pacing")
      return waiting.length > 0 && waiting.map(({ id }) => id)
    }, "a submit waiting for its slot")
    await gw.stop()
    gw = await startGateway(env, undefined, {}, backend, gw)

    for (const id of ids) {
      expect(lastSeen(await pollTask(gw, acct.resource.key, id, undefined, { deadlineMs: 90_000 })).status, id)
        .toBe("succeeded")
    }
    // Each task created upstream once.
    expect(fake.tasks.size).toBe(TASKS)
    expect(new Set([...fake.tasks.values()].map((t) => t.body.content[0].text)).size).toBe(TASKS)
    for (const id of pacing) {
      const outcomes = (await operator(gw).task(id)).attempts.map((a) => a.outcome)
      expect(outcomes, id).toEqual(["pacing", "succeeded"])
    }
  }, 180_000)
})
