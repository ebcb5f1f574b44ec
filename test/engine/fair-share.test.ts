import { afterEach, describe, expect, it } from "vitest"
import { type FakeVideos, startFakeVideos } from "../fakes/openai-videos.ts"
import { createAccount, type TestAccount } from "../support/adminApi.ts"
import { api } from "../support/api.ts"
import { alsoWith, configWith } from "../support/config.ts"
import { backend } from "../support/database.ts"
import { eventually } from "../support/eventually.ts"
import { startGateway, type TestGateway } from "../support/gateway.ts"
import { FAST, KEY, videoTask } from "../support/openaiVideos.ts"
import { query } from "../support/tasks.ts"
import { quickEngine } from "../support/upstream.ts"

/**
 * Fair share of a scarce channel (docs/engine.md, Fair share between
 * accounts), end to end: a channel of concurrency 2 in front of the fake
 * OpenAI Videos API, whose every video is done at its first poll. The fake
 * records when each create arrived, and each task's prompt names its account,
 * so the order in which the channel started the accounts' tasks is read from
 * the upstream's side. The engine runs in-process (ROLE=all).
 */

let fake: FakeVideos | undefined
let gw: TestGateway | undefined
afterEach(async () => {
  await gw?.close()
  await fake?.close()
  gw = fake = undefined
})

let configDir = ""
const start = async (channel: Record<string, unknown>, groups: (json: any) => void, role = "all") => {
  fake = await startFakeVideos(KEY)
  // Every video is done at its first poll: a task takes one poll interval and a download.
  for (let i = 0; i < 1000; i++) fake.lives.push({ statuses: ["completed"] })
  const config = quickEngine(configWith("models.json", (models) => {
    models.channels.scarce = {
      adapter: "openai-videos",
      base_url: fake!.url,
      credentials: { api_key: { env: "OPENAI_VIDEOS_KEY" } },
      timeouts: { submit_s: 10, poll_s: 5, download_s: 30 },
      ...channel
    }
    models.models[FAST].channels = [{ channel: "scarce", upstream_model: "sora-2" }]
  }))
  configDir = alsoWith(config, "groups.json", groups)
  gw = await startGateway({ CONFIG_DIR: config, ROLE: role, OPENAI_VIDEOS_KEY: KEY })
  return gw
}

/** The same installation started again with its engine: what was queued meanwhile is served from the first claim. */
const restartWithEngine = async () => {
  await gw!.stop()
  gw = await startGateway({ CONFIG_DIR: configDir, ROLE: "all", OPENAI_VIDEOS_KEY: KEY }, undefined, {}, backend, gw!)
}

/** The accounts' creates, in the order the upstream received them, by the account named in each prompt. */
const startedOrder = () =>
  fake!.requests.filter((r) => r.method === "POST").map((r) => String(r.fields.prompt).split(" ")[0]!)

/** The accounts' finished tasks, in the order the upstream served their results (each downloaded once). */
const finishedOrder = () =>
  fake!.requests.filter((r) => r.method === "GET" && r.path.endsWith("/content"))
    .map((r) => String(fake!.videos.get(r.path.split("/")[3]!)!.prompt).split(" ")[0]!)

const queue = async (account: TestAccount, name: string, n: number) => {
  const ids: Array<string> = []
  for (let i = 0; i < n; i++) ids.push((await api(gw!, account).createVideo(videoTask(`${name} task ${i}`))).id)
  return ids
}

const allSucceeded = async (account: TestAccount, ids: ReadonlyArray<string>) => {
  for (const id of ids) expect((await api(gw!, account).getVideo(id)).status, id).toBe("succeeded")
  return true
}

describe(`fair share on a scarce channel (${backend})`, () => {
  it("an account's 200 queued tasks hold another account for one task at most; all succeed", async () => {
    await start({ concurrency: 2 }, () => {})
    const a = await createAccount(gw!, { name: "A", wallet_credits: 100_000 })
    const b = await createAccount(gw!, { name: "B", wallet_credits: 100_000 })
    const aIds = await queue(a, "A", 200)
    // A's burst is being worked through when B arrives.
    await eventually(() => expect(startedOrder().length).toBeGreaterThanOrEqual(4), "A's first tasks started")
    const startedBeforeB = startedOrder().length
    const bAt = Date.now()
    const bIds = await queue(b, "B", 2)
    await eventually(() => expect(startedOrder()).toContain("B"), "B's first task started", { deadlineMs: 30_000 })
    const bWaitedMs = fake!.requests.find((r) => r.method === "POST" && String(r.fields.prompt).startsWith("B"))!.at -
      bAt
    // Between B's creates and its first start, the channel started at most the one A task that a slot
    // freed at the same moment may give (two slots planned in one claim: the older head first).
    const order = startedOrder()
    const aBetween = order.slice(startedBeforeB, order.indexOf("B")).filter((who) => who === "A").length
    expect(aBetween).toBeLessThanOrEqual(1)
    // B's second task starts before A's burst is through, not after its 200 tasks.
    await eventually(() => expect(startedOrder().filter((w) => w === "B")).toHaveLength(2), "B's tasks started")
    expect(startedOrder().lastIndexOf("B")).toBeLessThan(startedBeforeB + 6)
    await eventually(
      () => expect(fake!.requests.filter((r) => r.method === "POST")).toHaveLength(202),
      "every task started upstream",
      { deadlineMs: 150_000, intervalMs: 500 }
    )
    await eventually(() => allSucceeded(a, aIds.slice(-5)), "A's last tasks succeeded", { deadlineMs: 30_000 })
    await allSucceeded(a, aIds)
    await allSucceeded(b, bIds)
    // Each task reached the upstream once, and the channel never held more than its two.
    expect(fake!.peakInFlight()).toBeLessThanOrEqual(2)
    // The lanes' counts (kept by a trigger on every move of a task) are back to nothing queued or in flight.
    const lanes = await query(
      gw!,
      (sql) => sql<{ queued: number; in_flight: number }>`SELECT queued, in_flight FROM task_lanes`
    )
    expect(lanes.map((l) => [Number(l.queued), Number(l.in_flight)])).toEqual([[0, 0], [0, 0]])
    console.log(`B waited ${bWaitedMs} ms for its first task to start (${backend})`)
  }, 240_000)

  it("two busy groups of weights 3 and 1 finish tasks within 10 % of 3:1", async () => {
    await start({ concurrency: 4, fair_share: "group" }, (groups) => {
      groups.groups.heavy = { multiplier: 1, weight: 3 }
      groups.groups.light = { multiplier: 1, weight: 1 }
    }, "api")
    // Two accounts in each group: the group is what is weighed, its accounts share its part equally.
    const heavy = [
      await createAccount(gw!, { name: "H1", group: "heavy", wallet_credits: 100_000 }),
      await createAccount(gw!, { name: "H2", group: "heavy", wallet_credits: 100_000 })
    ]
    const light = [
      await createAccount(gw!, { name: "L1", group: "light", wallet_credits: 100_000 }),
      await createAccount(gw!, { name: "L2", group: "light", wallet_credits: 100_000 })
    ]
    // Queued while no engine runs, the light group's first, so an order by age alone would favour it; then
    // the engine starts and serves both groups from its first claim.
    for (const [i, account] of light.entries()) await queue(account, `L${i}`, 60)
    for (const [i, account] of heavy.entries()) await queue(account, `H${i}`, 60)
    await restartWithEngine()
    // Both groups stay busy until the heavy one has finished 90 tasks (the light one then has about 30).
    await eventually(
      () => expect(finishedOrder().filter((who) => who.startsWith("H")).length).toBeGreaterThanOrEqual(90),
      "the heavy group's first 90 tasks finished",
      { deadlineMs: 150_000, intervalMs: 500 }
    )
    // The window: the first 120 tasks finished.
    const window = finishedOrder().slice(0, 120)
    const heavyDone = window.filter((who) => who.startsWith("H")).length
    const lightDone = window.length - heavyDone
    const ratio = heavyDone / lightDone
    console.log(`weights 3:1 finished ${heavyDone}:${lightDone} = ${ratio.toFixed(2)} (${backend})`)
    expect(ratio).toBeGreaterThanOrEqual(3 * 0.9)
    expect(ratio).toBeLessThanOrEqual(3 * 1.1)
    // Within each group its two accounts were served alike.
    const h = [window.filter((w) => w.startsWith("H0")).length, window.filter((w) => w.startsWith("H1")).length]
    expect(Math.abs(h[0]! - h[1]!)).toBeLessThanOrEqual(4)
  }, 240_000)
})
