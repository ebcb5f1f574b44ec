import { rmSync } from "node:fs"
import { afterAll, afterEach, describe, expect, it } from "vitest"
import { type FakeVideos, startFakeVideos } from "../fakes/openai-videos.ts"
import { createAccount } from "../support/adminApi.ts"
import { api } from "../support/api.ts"
import { alsoWith, configWith } from "../support/config.ts"
import { backend } from "../support/database.ts"
import { eventually } from "../support/eventually.ts"
import { type Installation, installation } from "../support/installation.ts"
import { FAST, KEY, videoTask } from "../support/openaiVideos.ts"
import type { Service } from "../support/process.ts"

/**
 * A channel's `concurrency` caps its tasks in flight upstream across every
 * replica (docs/adapters/README.md, Settings every channel takes), counted in
 * the database: tasks waiting upstream hold no lease and no fiber, yet they
 * count. On PostgreSQL two worker processes and an API process share the
 * channel; on the embedded PGlite (one process per database) the one process
 * holds the cap alone. The fake OpenAI Videos API counts what it sees in
 * flight: created, and not yet said to have ended by a poll.
 */

const CONCURRENCY = 3
const TASKS = 12
const DEADLINE_MS = 120_000

let fake: FakeVideos | undefined
let site: Installation | undefined
const configs: Array<string> = []
const processes: Array<Service> = []
afterEach(async (context) => {
  if (context.task.result?.state === "fail") {
    for (const service of processes) console.error(service.output().split("\n").slice(-30).join("\n"))
  }
  await site?.close()
  await fake?.close()
})
afterAll(() => configs.forEach((dir) => rmSync(dir, { recursive: true, force: true })))

const channelConfig = (baseUrl: string) => {
  const dir = configWith("models.json", (models) => {
    models.channels.ovideos = {
      adapter: "openai-videos",
      base_url: baseUrl,
      credentials: { api_key: { env: "OPENAI_VIDEOS_KEY" } },
      concurrency: CONCURRENCY
    }
    models.models[FAST].channels = [{ channel: "ovideos", upstream_model: "sora-2" }]
  })
  configs.push(dir)
  return alsoWith(dir, "limits.json", (limits) => {
    limits.engine = { poll_interval_ms: 200, heartbeat_s: 1, lease_s: 10, retry_base_ms: 50 }
    for (const rate of Object.values(limits.rate_limits) as Array<any>) rate.burst = rate.per_second = 100_000
  })
}

describe(`channel concurrency across processes (${backend})`, () => {
  it(`with concurrency ${CONCURRENCY}, the upstream never sees more than ${CONCURRENCY} tasks in flight`, async () => {
    fake = await startFakeVideos(KEY)
    // Each video takes a few polls upstream, so tasks wait there while others queue.
    for (let i = 0; i < TASKS; i++) fake.lives.push({ statuses: ["queued", "in_progress", "in_progress", "completed"] })
    site = await installation((service) => processes.push(service))
    const config = channelConfig(fake.url)
    const options = { env: { OPENAI_VIDEOS_KEY: KEY } }
    const workers: Array<Service> = []
    if (backend === "postgresql") {
      await site.serve("api", config, options)
      for (let i = 0; i < 2; i++) workers.push((await site.worker(config, options)).service)
    } else {
      workers.push(await site.serve("all", config, options))
    }

    const acct = await createAccount(site.target, { name: "concurrency", wallet_credits: 1000 })
    const tasks = api(site.target, acct)
    const ids: Array<string> = []
    for (let i = 0; i < TASKS; i++) ids.push((await tasks.createVideo(videoTask(`a lighthouse, take ${i}`))).id)

    const statuses = await eventually(
      async () => {
        const now = await Promise.all(ids.map(async (id) => (await tasks.getVideo(id)).status))
        return now.every((s) => s === "succeeded" || s === "failed") && now
      },
      "every task finished",
      { deadlineMs: DEADLINE_MS, intervalMs: 250 }
    )
    expect(statuses).toEqual(ids.map(() => "succeeded"))
    // Every task created upstream once; the cap was reached, never passed.
    expect(fake.requests.filter((r) => r.method === "POST").length).toBe(TASKS)
    expect(fake.peakInFlight()).toBe(CONCURRENCY)

    const claimedBy = workers.map((w) => w.logs().filter((l) => l.message === "task claimed").length)
    expect(claimedBy.reduce((a, b) => a + b, 0)).toBe(TASKS)
    console.info(`tasks claimed per worker process: ${claimedBy.join(", ")}`)
  }, DEADLINE_MS + 90_000)
})
