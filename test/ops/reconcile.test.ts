import { createFalClient } from "@fal-ai/client"
import Replicate from "replicate"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type FakeArk, startFakeArk } from "../fakes/ark.ts"
import { type FakeFal, startFakeFal } from "../fakes/fal.ts"
import { type FakeReplicate, startFakeReplicate } from "../fakes/replicate.ts"
import { versionOf } from "../fakes/replicateModels.ts"
import { operator } from "../support/adminApi.ts"
import { configWith } from "../support/config.ts"
import { backend } from "../support/database.ts"
import { startGateway, type TestGateway } from "../support/gateway.ts"
import { refused } from "../support/taskApi.ts"
import { query } from "../support/tasks.ts"
import { createAndWait, engineRow, quickEngine } from "../support/upstream.ts"

/**
 * Reconciling a channel against its provider's own record
 * (docs/operating.md, Reconciling a channel): for each adapter that can list
 * (Ark's task list, Replicate's predictions, fal's request history), tasks
 * run through the gateway, then a task created at the provider directly (no
 * attempt knows it: a create whose answer was lost) and a task whose record
 * the provider lists otherwise than it answered (its usage, or whether it is
 * billed). The reconciliation of the window finds those two and nothing
 * else. The planted creates at Replicate and fal are made with the
 * providers' official clients (`replicate`, `@fal-ai/client`), which also
 * read the fake's list as they read the real one.
 */

const ARK_KEY = "ark-key-0123456789abcdef"
const REPLICATE_TOKEN = "r8_fake_0123456789abcdef"
const FAL_KEY = "fal-key-id:fal-key-secret-0123456789"
const ARK_MODEL = "dreamina-seedance-2-0-260128"
const SEEDANCE = "bytedance/seedance-1-pro"
const SEEDANCE_VERSION = versionOf(SEEDANCE)
const FAL_VEO = "fal-ai/veo3.1"

const MODELS = { ark: "provx-famS-720p", replicate: "provy-famS-2.0-720p", fal: "provx-famV-3.1-standard-720p" }

let gw: TestGateway
let ark: FakeArk
let replicate: FakeReplicate
let fal: FakeFal

beforeAll(async () => {
  ;[ark, replicate, fal] = await Promise.all([
    startFakeArk([ARK_KEY]),
    startFakeReplicate([REPLICATE_TOKEN]),
    startFakeFal(FAL_KEY)
  ])
  const config = configWith("models.json", (models) => {
    const common = { concurrency: 10, timeouts: { submit_s: 3, poll_s: 2, download_s: 30 } }
    models.channels.ark = { ...common, adapter: "ark", base_url: ark.url, credentials: { api_key: { env: "ARK_KEY" } } }
    models.channels.replicate = {
      ...common,
      adapter: "replicate",
      base_url: replicate.url,
      credentials: { api_token: { env: "REPLICATE_TOKEN" } }
    }
    models.channels.fal = {
      ...common,
      adapter: "fal",
      base_url: fal.url,
      platform_url: `${fal.url}/v1`,
      credentials: { api_key: { env: "FAL_KEY" } }
    }
    models.models[MODELS.ark].channels = [{
      channel: "ark",
      upstream_model: ARK_MODEL,
      cost: { unit: "token", price: 0.0000012 }
    }]
    models.models[MODELS.replicate].channels = [{
      channel: "replicate",
      upstream_model: `${SEEDANCE}:${SEEDANCE_VERSION}`,
      narrower: { durations: { min: 4, max: 12 } },
      cost: { unit: "second", price: 0.000975 }
    }]
    models.models[MODELS.fal].channels = [{
      channel: "fal",
      upstream_model: FAL_VEO,
      cost: { unit: "second", price: 0.4 }
    }]
  })
  quickEngine(config)
  gw = await startGateway({ ROLE: "all", CONFIG_DIR: config, ARK_KEY, REPLICATE_TOKEN, FAL_KEY })
}, 90_000)
afterAll(async () => {
  await gw?.close()
  await Promise.all([ark?.close(), replicate?.close(), fal?.close()])
})

const run = async (model: string, prompt: string, duration: number, output: Record<string, unknown> = {}) => {
  const { task } = await createAndWait(gw, {
    model,
    operation: "generation",
    input: { prompt },
    output: { duration, ...output }
  }, { name: "reconciled", intervalMs: 100 })
  return { task, upstreamId: (await engineRow(gw, task.id)).upstream_id! }
}

/** A window around now, in Unix seconds, holding everything this file made. */
const started = Math.floor(Date.now() / 1000) - 1
const window = () => ({ from: started, to: Math.ceil(Date.now() / 1000) + 1 })

const reconcile = (channel: string) => {
  const { from, to } = window()
  return operator(gw).reconcile(channel, from, to)
}

describe(`reconciling a channel against its provider's record (${backend})`, () => {
  it("ark (its task list): the lost create and the tokens its list counts otherwise, nothing else", async () => {
    const plain = await run(MODELS.ark, "a plain fox", 5)
    ark.scenarios.push({ tokens: 100_000, listedTokens: 120_000 })
    const recounted = await run(MODELS.ark, "a recounted fox", 5)
    expect([plain.task.status, recounted.task.status]).toEqual(["succeeded", "succeeded"])
    // Created at Ark directly, as a create whose answer was lost would be: no attempt knows it.
    const lost = await fetch(`${ark.url}/contents/generations/tasks`, {
      method: "POST",
      headers: { authorization: `Bearer ${ARK_KEY}`, "content-type": "application/json" },
      body: JSON.stringify({ model: ARK_MODEL, content: [{ type: "text", text: "nobody's fox" }] })
    }).then((r) => r.json()) as { id: string }

    const answer = await reconcile("ark")
    expect(answer).toMatchObject({ object: "channel.reconciliation", channel: "ark", adapter: "ark" })
    expect(answer.provider_tasks).toBe(3)
    expect(answer.attempts).toBe(2)
    expect(answer.lost_creates.map((t) => t.upstream_id)).toEqual([lost.id])
    expect(answer.lost_creates[0]).toMatchObject({ model: ARK_MODEL, status: "queued" })
    expect(answer.unseen_attempts).toEqual([])
    expect(answer.usage_mismatches).toHaveLength(1)
    expect(answer.usage_mismatches[0]).toMatchObject({
      upstream_id: recounted.upstreamId,
      task_id: recounted.task.id,
      provider: { usage: { unit: "token", quantity: 120_000 }, billed: true },
      recorded: { usage: { unit: "token", quantity: 100_000 }, billed: true, cost: 0.12 }
    })
  })

  it("replicate (its predictions list): the lost create and the time its list counts otherwise, nothing else", async () => {
    const client = new Replicate({ auth: REPLICATE_TOKEN, baseUrl: replicate.url, useFileOutput: false })
    const silent = { generate_audio: false }
    const plain = await run(MODELS.replicate, "a plain crane", 5, silent)
    replicate.scenarios.push({ predictTime: 20, listedPredictTime: 26.5 })
    const recounted = await run(MODELS.replicate, "a recounted crane", 5, silent)
    expect([plain.task.status, recounted.task.status]).toEqual(["succeeded", "succeeded"])
    const lost = await client.predictions.create({
      version: SEEDANCE_VERSION,
      input: { prompt: "nobody's crane", duration: 5 }
    })
    // The list as Replicate's own client pages it: every prediction, newest first.
    const listed: Array<{ id: string }> = []
    for await (const page of client.paginate(client.predictions.list)) listed.push(...page)
    expect(listed.map((p) => p.id)).toEqual([lost.id, recounted.upstreamId, plain.upstreamId])

    const answer = await reconcile("replicate")
    expect(answer.provider_tasks).toBe(3)
    expect(answer.attempts).toBe(2)
    expect(answer.lost_creates).toEqual([{
      upstream_id: lost.id,
      created_at: expect.any(Number),
      model: SEEDANCE,
      status: "starting",
      usage: null,
      billed: null
    }])
    expect(answer.unseen_attempts).toEqual([])
    expect(answer.usage_mismatches).toHaveLength(1)
    expect(answer.usage_mismatches[0]).toMatchObject({
      upstream_id: recounted.upstreamId,
      task_id: recounted.task.id,
      provider: { usage: { unit: "second", quantity: 26.5, predict_time: 26.5 }, billed: true },
      recorded: { usage: { unit: "second", quantity: 20, predict_time: 20 }, billed: true }
    })
  })

  it("fal (its request history): the lost create and a run its record bills where it answered a failure, nothing else", async () => {
    const plain = await run(MODELS.fal, "a plain harbour", 4)
    // Its result fetch answers a runner failure (recorded: not billed); its history lists it as a success.
    fal.scenarios.push({ end: "runner_error", listedStatusCode: 200 })
    const disputed = await run(MODELS.fal, "a disputed harbour", 4)
    expect([plain.task.status, disputed.task.status]).toEqual(["succeeded", "failed"])
    const client = createFalClient({
      credentials: FAL_KEY,
      requestMiddleware: async (request) => ({ ...request, url: request.url.replace("https://queue.fal.run", fal.url) })
    })
    const lost = await client.queue.submit(FAL_VEO, { input: { prompt: "nobody's harbour", duration: "4s" } as any })

    const answer = await reconcile("fal")
    expect(answer.provider_tasks).toBe(3)
    expect(answer.attempts).toBe(2)
    expect(answer.lost_creates).toEqual([{
      upstream_id: `fal-ai/veo3.1/requests/${lost.request_id}`,
      created_at: expect.any(Number),
      model: FAL_VEO,
      status: "running",
      usage: null,
      billed: null
    }])
    expect(answer.unseen_attempts).toEqual([])
    expect(answer.usage_mismatches).toEqual([{
      upstream_id: disputed.upstreamId,
      task_id: disputed.task.id,
      attempt: 1,
      provider: { usage: null, billed: true },
      recorded: { usage: expect.objectContaining({ unit: "second" }), billed: false, cost: 0 }
    }])
  })

  it("an attempt whose upstream id the provider does not have is named", async () => {
    const { task } = await run(MODELS.ark, "a fox recorded twice", 5)
    const now = Math.floor(Date.now() / 1000)
    // As an attempt that recorded an id Ark never gave (a relay's id, an edited row).
    await query(
      gw,
      (sql) =>
        sql`INSERT INTO task_attempts (task_id, attempt, channel, upstream_id, outcome, created_at, updated_at)
        VALUES (${task.id}, 99, 'ark', 'cgt-20991231000000-never', 'waiting', ${now}, ${now})`
    )
    const answer = await reconcile("ark")
    expect(answer.unseen_attempts).toEqual([{
      upstream_id: "cgt-20991231000000-never",
      task_id: task.id,
      attempt: 99,
      outcome: "waiting",
      created_at: now
    }])
    expect(answer.lost_creates).toHaveLength(1)
    expect(answer.usage_mismatches).toHaveLength(1)
  })

  it("a channel whose adapter cannot list: 409 reconciliation_unavailable; a window that is not one: 400", async () => {
    const { from, to } = window()
    const unavailable = await refused(
      operator(gw).reconcile("sandbox", from, to),
      409,
      "reconciliation_unavailable",
      "conflict_error"
    )
    expect(unavailable.message).toMatch(/sandbox/)
    await refused(operator(gw).reconcile("ark", to, from), 400, "invalid_request")
    await refused(operator(gw).reconcile("ark", from, from + 40 * 86_400), 400, "invalid_request")
    await refused(operator(gw).reconcile("nowhere", from, to), 404, "channel_not_found")
  })
})
