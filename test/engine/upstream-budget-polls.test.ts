// Runs alone: it counts the requests a fake upstream sees in each second, which a loaded machine bunches.
import { rmSync } from "node:fs"
import { afterAll, describe, expect, it } from "vitest"
import { busiest } from "../fakes/ark.ts"
import { type FakeVideos, startFakeVideos } from "../fakes/openai-videos.ts"
import { createAccount } from "../support/adminApi.ts"
import { api } from "../support/api.ts"
import { configWith } from "../support/config.ts"
import { backend } from "../support/database.ts"
import { eventually } from "../support/eventually.ts"
import { startGateway, type TestGateway } from "../support/gateway.ts"
import { FAST, KEY, videoTask } from "../support/openaiVideos.ts"
import { quickEngine } from "../support/upstream.ts"

/**
 * A paced poller on an upstream with no batch query (docs/engine.md, The
 * upstream request budget): each poll is one request at its slot, and the
 * tasks waiting share the polls' part of the budget, so the gap between two
 * polls of a task stretches with their number. 40 tasks wait on the fake
 * OpenAI Videos API, each done at its third poll, on a channel with a budget
 * of 10 requests a second of which polls may take half: no second holds more
 * than the budget (and two for the jitter), and no task is polled more than
 * its three times (a poll a held task's hold outlived would be a fourth).
 */

const TASKS = 40
const BUDGET = 10
const POLLS_EACH = 3

let fake: FakeVideos | undefined
let gw: TestGateway | undefined
let config: string | undefined
afterAll(async () => {
  await gw?.close()
  await fake?.close()
  if (config !== undefined) rmSync(config, { recursive: true, force: true })
})

describe(`a paced poller on single-task polls (${backend})`, () => {
  it(
    `${TASKS} tasks waiting at ${BUDGET} requests a second: polls spread, never more than the budget, each task polled ${POLLS_EACH} times`,
    async () => {
      fake = await startFakeVideos(KEY)
      for (let i = 0; i < TASKS; i++) fake.lives.push({ statuses: ["in_progress", "in_progress", "completed"] })
      config = configWith("models.json", (models) => {
        models.channels.ovideos = {
          adapter: "openai-videos",
          base_url: fake!.url,
          credentials: { api_key: { env: "OPENAI_VIDEOS_KEY" } },
          concurrency: TASKS,
          timeouts: { submit_s: 5, poll_s: 2, download_s: 30 },
          requests_per_second: BUDGET,
          create_share: 0.5
        }
        models.models[FAST].channels = [{ channel: "ovideos", upstream_model: "sora-2" }]
      })
      quickEngine(config)
      gw = await startGateway({ ROLE: "all", CONFIG_DIR: config, OPENAI_VIDEOS_KEY: KEY })

      const acct = await createAccount(gw, { name: "paced polls", wallet_credits: 1000 })
      const tasks = api(gw, acct)
      const ids: Array<string> = []
      for (let i = 0; i < TASKS; i++) ids.push((await tasks.createVideo(videoTask(`a harbour, take ${i}`))).id)
      const statuses = await eventually(
        async () => {
          const now = await Promise.all(ids.map(async (id) => (await tasks.getVideo(id)).status))
          return now.every((s) => s === "succeeded" || s === "failed") && now
        },
        "every task ended",
        { deadlineMs: 240_000, intervalMs: 1000 }
      )
      expect(statuses).toEqual(ids.map(() => "succeeded"))

      const calls = fake.requests.filter((r) => !r.path.endsWith("/content"))
      const polls = calls.filter((r) => r.method === "GET")
      const busiestSecond = busiest(calls.map((r) => r.at).sort((a, b) => a - b), 1000)
      console.info(
        `${backend}: ${calls.length} requests (${polls.length} polls), busiest second ${busiestSecond.count}, busiest ` +
          `second of polls ${busiest(polls.map((r) => r.at).sort((a, b) => a - b), 1000).count}`
      )
      expect(busiestSecond.count).toBeLessThanOrEqual(BUDGET + 2)
      // Each video created once and polled exactly until it said it was done.
      expect(fake.videos.size).toBe(TASKS)
      for (const video of fake.videos.values()) expect(video.polls, video.id).toBe(POLLS_EACH)
    },
    300_000
  )
})
