import { rmSync } from "node:fs"
import { afterAll, afterEach, describe, expect, it } from "vitest"
import { type FakeVideos, startFakeVideos } from "../fakes/openai-videos.ts"
import { createAccount, operator } from "../support/adminApi.ts"
import { api } from "../support/api.ts"
import { alsoWith, configWith, unthrottled } from "../support/config.ts"
import { backend } from "../support/database.ts"
import { eventually } from "../support/eventually.ts"
import { startGateway, type TestGateway } from "../support/gateway.ts"
import { expectError, raw } from "../support/http.ts"
import { type Installation, installation } from "../support/installation.ts"
import { METRICS_TOKEN, samplesOf, scrape, valueOf } from "../support/metrics.ts"
import { FAST, KEY, videoTask } from "../support/openaiVideos.ts"
import type { Service } from "../support/process.ts"
import { videoRequest } from "../support/tasks.ts"
import { quickEngine } from "../support/upstream.ts"

/**
 * An account's limits, set per group in config/groups.json (docs/api.md,
 * Account limits): `max_queued` refuses a create with 429
 * `too_many_queued_tasks` before anything is charged or created, and the
 * quote says so; `max_in_flight_per_channel` holds an account to part of a
 * channel, on every replica together.
 */

const dirs: Array<string> = []
afterAll(() => dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })))

describe(`max_queued (${backend})`, () => {
  let gw: TestGateway
  afterEach(() => gw?.close())

  it("a create past the queue answers 429 with Retry-After, charges and creates nothing; the quote and views say so", async () => {
    const config = alsoWith(unthrottled(), "groups.json", (groups) => {
      groups.groups.capped = { multiplier: 1, max_queued: 3 }
    })
    dirs.push(config)
    // The API alone: nothing starts, so what is created stays queued.
    gw = await startGateway({ CONFIG_DIR: config, METRICS_TOKEN })
    const acct = await createAccount(gw, { name: "capped", group: "capped", wallet_credits: 100 })
    const other = await createAccount(gw, { name: "free", wallet_credits: 100 })
    const tasks = api(gw, acct)
    const first = await raw(gw, "POST", "/v1/video/tasks", {
      key: acct.model.key,
      json: videoRequest(),
      headers: { "idempotency-key": "first" }
    })
    expect(first.status).toBe(202)
    for (let i = 0; i < 2; i++) await tasks.createVideo(videoRequest())
    const before = await operator(gw).account(acct.id)
    expect(before.capacity).toMatchObject({ max_queued: 3, queued: 3, max_in_flight_per_channel: null, weight: 1 })
    expect(before.capacity.channels).toEqual([{ channel: "sandbox", queued: 3, in_flight: 0 }])

    const quote = await raw(gw, "POST", "/v1/video/tasks/quote", { key: acct.model.key, json: videoRequest() })
    expect(quote.status).toBe(200)
    expect((quote.body as any).queue).toEqual({ queued: 3, max_queued: 3, room: false })
    expect((quote.body as any).enough_balance).toBe(true)

    const refused = await raw(gw, "POST", "/v1/video/tasks", { key: acct.model.key, json: videoRequest() })
    expectError(refused, 429, "too_many_queued_tasks", "rate_limit_error")
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0)
    // Nothing charged, nothing created.
    const after = await operator(gw).account(acct.id)
    expect(after.wallet_credits).toBe(before.wallet_credits)
    expect(after.ledger.entries).toBe(before.ledger.entries)
    expect((await tasks.listVideos({ limit: 100 })).data).toHaveLength(3)
    // A replay of a create the account made before is still answered, not refused.
    const replay = await raw(gw, "POST", "/v1/video/tasks", {
      key: acct.model.key,
      json: videoRequest(),
      headers: { "idempotency-key": "first" }
    })
    expect(replay.status).toBe(202)
    expect(replay.headers.get("idempotent-replayed")).toBe("true")
    // Another account, of a group without the limit, is not held by it.
    const quoteOther = await raw(gw, "POST", "/v1/video/tasks/quote", { key: other.model.key, json: videoRequest() })
    expect((quoteOther.body as any).queue).toEqual({ queued: 0, max_queued: null, room: true })
    expect((await raw(gw, "POST", "/v1/video/tasks", { key: other.model.key, json: videoRequest() })).status).toBe(202)

    // Metrics by group, never by account.
    const samples = samplesOf((await scrape(gw, METRICS_TOKEN)).body)
    expect(valueOf(samples, "mtg_account_limit_refusals_total", { group: "capped", limit: "max_queued" })).toBe(1)
    expect(valueOf(samples, "mtg_account_limit_refusals_total", { group: "default", limit: "max_queued" })).toBe(0)
    expect(valueOf(samples, "mtg_group_tasks_queued", { group: "capped" })).toBe(3)
    expect(valueOf(samples, "mtg_group_tasks_queued", { group: "default" })).toBe(1)
    expect(valueOf(samples, "mtg_group_max_queued", { group: "capped" })).toBe(3)
    expect(samples.some((s) => Object.values(s.labels).includes(acct.id))).toBe(false)
  })
})

describe(`max_in_flight_per_channel (${backend})`, () => {
  let fake: FakeVideos | undefined
  let site: Installation | undefined
  const processes: Array<Service> = []
  afterEach(async (context) => {
    if (context.task.result?.state === "fail") {
      for (const service of processes) console.error(service.output().split("\n").slice(-30).join("\n"))
    }
    await site?.close()
    await fake?.close()
  })

  it("holds an account to its part of a channel, on two worker replicas at once", async () => {
    fake = await startFakeVideos(KEY)
    // Each video takes a few polls, so tasks stay in flight upstream while the others wait.
    for (let i = 0; i < 12; i++) fake.lives.push({ statuses: ["queued", "in_progress", "in_progress", "completed"] })
    const config = quickEngine(configWith("models.json", (models) => {
      models.channels.ovideos = {
        adapter: "openai-videos",
        base_url: fake!.url,
        credentials: { api_key: { env: "OPENAI_VIDEOS_KEY" } },
        concurrency: 10
      }
      models.models[FAST].channels = [{ channel: "ovideos", upstream_model: "sora-2" }]
    }))
    alsoWith(config, "groups.json", (groups) => {
      groups.groups.capped = { multiplier: 1, max_in_flight_per_channel: 2 }
    })
    dirs.push(config)
    site = await installation((service) => processes.push(service))
    const options = { env: { OPENAI_VIDEOS_KEY: KEY } }
    if (backend === "postgresql") {
      await site.serve("api", config, options)
      for (let i = 0; i < 2; i++) await site.worker(config, options)
    } else {
      await site.serve("all", config, options)
    }
    const acct = await createAccount(site.target, { name: "capped", group: "capped", wallet_credits: 1000 })
    const tasks = api(site.target, acct)
    const ids: Array<string> = []
    for (let i = 0; i < 10; i++) ids.push((await tasks.createVideo(videoTask(`capped take ${i}`))).id)
    const statuses = await eventually(
      async () => {
        const now = await Promise.all(ids.map(async (id) => (await tasks.getVideo(id)).status))
        return now.every((s) => s === "succeeded" || s === "failed") && now
      },
      "every task finished",
      { deadlineMs: 120_000, intervalMs: 250 }
    )
    expect(statuses).toEqual(ids.map(() => "succeeded"))
    // The channel had room for ten; the account was held to two at a time, and reached them.
    expect(fake.requests.filter((r) => r.method === "POST")).toHaveLength(10)
    expect(fake.peakInFlight()).toBe(2)
  }, 200_000)
})
