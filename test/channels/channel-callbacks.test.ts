import { Effect, Either } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { verifyStandardWebhook } from "../../src/channel/contract/StandardWebhooks.ts"
import { TaskQueue } from "../../src/tasks/engine/TaskQueue.ts"
import { type FakeArk, startFakeArk } from "../fakes/ark.ts"
import { signatureHeaders } from "../fakes/callbackEmitter.ts"
import { type FakeKling, startFakeKling } from "../fakes/kling.ts"
import { createAccount } from "../support/adminApi.ts"
import { api } from "../support/api.ts"
import { ARK_KEY, UPSTREAM } from "../support/ark.ts"
import { alsoWith, configWith } from "../support/config.ts"
import { backend } from "../support/database.ts"
import { eventually, sleep } from "../support/eventually.ts"
import { startGateway, type TestGateway } from "../support/gateway.ts"
import { ACCOUNT } from "../support/kling.ts"
import { query } from "../support/tasks.ts"

/**
 * Upstream callbacks as an accelerator, never as truth
 * (docs/adapters/README.md, Upstream callbacks): with `callbacks: true` a
 * channel sends its callback URL in each submit; a callback makes the tasks it
 * names due for a poll at once, and only the poll decides their state. Polling
 * is slowed to 20 s here, so a task that ends within seconds did so because its
 * upstream called back.
 */

const ARK_MODEL = "provy-famS-2.0-480p"
const KLING_MODEL = "provx-famK-3.0-720p"
const KLING_LEGACY_MODEL = "provx-famK-3.0-1080p"
const SECRET = "whsec_" + Buffer.from("kling console secret for tests!!").toString("base64")
const SLOW_POLL_MS = 20_000
const CALLBACK_PATH = "/v1/upstream-callbacks/"

interface Setup {
  readonly ark: FakeArk
  readonly kling: FakeKling
  readonly gw: TestGateway
  readonly close: () => Promise<void>
}

const start = async (pollIntervalMs: number): Promise<Setup> => {
  const [ark, kling] = await Promise.all([startFakeArk([ARK_KEY]), startFakeKling(ACCOUNT)])
  kling.callbacks.options.secret = SECRET
  const config = configWith("models.json", (models) => {
    const common = { concurrency: 10, timeouts: { submit_s: 2, poll_s: 2 }, callbacks: true }
    models.channels.byteplus = {
      ...common,
      adapter: "ark",
      base_url: ark.url,
      credentials: { api_key: { env: "ARK_KEY" } }
    }
    models.channels.klingai = {
      ...common,
      adapter: "kling",
      api: "current",
      base_url: kling.url,
      credentials: { api_key: { env: "KLING_API_KEY" }, webhook_secret: { env: "KLING_WEBHOOK_SECRET" } }
    }
    models.channels["klingai-jwt"] = {
      ...common,
      adapter: "kling",
      api: "legacy",
      base_url: kling.url,
      credentials: {
        access_key: { env: "KLING_AK" },
        secret_key: { env: "KLING_SK" },
        webhook_secret: { env: "KLING_WEBHOOK_SECRET" }
      }
    }
    models.models[ARK_MODEL].channels = [{ channel: "byteplus", upstream_model: UPSTREAM }]
    models.models[KLING_MODEL].channels = [{ channel: "klingai", upstream_model: "kling-3.0" }]
    models.models[KLING_LEGACY_MODEL].channels = [{ channel: "klingai-jwt", upstream_model: "kling-v3" }]
  })
  alsoWith(config, "limits.json", (limits) => {
    limits.engine = {
      poll_interval_ms: pollIntervalMs,
      heartbeat_s: 1,
      lease_s: 10,
      retry_base_ms: 50,
      generate_retries: 2
    }
    for (const rate of Object.values(limits.rate_limits) as Array<any>) rate.burst = rate.per_second = 10_000
  })
  const gw = await startGateway({
    ROLE: "all",
    CONFIG_DIR: config,
    ARK_KEY,
    KLING_API_KEY: ACCOUNT.apiKey,
    KLING_AK: ACCOUNT.accessKey,
    KLING_SK: ACCOUNT.secretKey,
    KLING_WEBHOOK_SECRET: SECRET
  })
  return {
    ark,
    kling,
    gw,
    close: async () => {
      await gw.close()
      await Promise.all([ark.close(), kling.close()])
    }
  }
}

const body = (model: string) => ({
  model,
  operation: "generation" as const,
  input: { prompt: "a lighthouse in a storm" },
  output: { duration: 5 }
})

const create = async (gw: TestGateway, model: string) => {
  const acct = await createAccount(gw, { name: "callbacks", wallet_credits: 100 })
  const created = await api(gw, acct).createVideoReply(body(model))
  expect(created.status).toBe(202)
  return { key: acct.resource.key, id: created.task.id, at: Date.now() }
}

const row = async (gw: TestGateway, id: string) =>
  (await query<{ run_state: string; run_at: string | null; upstream_id: string | null; nudged: boolean }>(
    gw,
    (sql) => sql`SELECT run_state, run_at, upstream_id, nudged FROM tasks WHERE id = ${id}`
  ))[0]!

/** Waits until the task waits upstream (its submit is done), returning its engine row. */
const waiting = async (gw: TestGateway, id: string) => {
  return eventually(
    async () => {
      const r = await row(gw, id)
      return r.run_state === "waiting" && r
    },
    `task ${id} waits upstream`,
    { deadlineMs: 10_000, intervalMs: 50 }
  )
}

describe(`upstream callbacks with polling slowed to ${SLOW_POLL_MS / 1000} s (${backend})`, () => {
  let s: Setup
  beforeAll(async () => {
    s = await start(SLOW_POLL_MS)
  }, 60_000)
  afterAll(async () => {
    await s?.close()
  })

  it("an ark task and kling tasks (both API generations) succeed soon after the upstream calls back", async () => {
    s.ark.scenarios.push({ stepMs: 400 })
    s.kling.scenarios.push({ stepMs: 400 }, { stepMs: 400 })
    const tasks = await Promise.all([
      create(s.gw, ARK_MODEL),
      create(s.gw, KLING_MODEL),
      create(s.gw, KLING_LEGACY_MODEL)
    ])
    for (const task of tasks) {
      const seen = await api(s.gw, { resource: task.key }).waitTask("video", task.id, undefined, {
        intervalMs: 100,
        deadlineMs: 15_000
      })
      expect(seen.at(-1)?.status).toBe("succeeded")
      // Far sooner than the first scheduled poll: the callbacks did it.
      expect(Date.now() - task.at).toBeLessThan(SLOW_POLL_MS / 2)
      expect(JSON.stringify(seen.at(-1))).not.toContain(CALLBACK_PATH)
    }
    // Each submit carried its channel's URL; the token names no channel and differs per channel.
    const arkUrl = s.ark.requests.find((r) => r.method === "POST")!.body.callback_url as string
    const klingCreates = s.kling.requests.filter((r) => r.method === "POST")
    const currentUrl = klingCreates.find((r) => r.body.options)!.body.options.callback_url as string
    const legacyUrl = klingCreates.find((r) => r.body.model_name)!.body.callback_url as string
    for (const url of [arkUrl, currentUrl, legacyUrl]) {
      expect(url.startsWith(`${s.gw.url}${CALLBACK_PATH}`)).toBe(true)
      expect(url.toLowerCase()).not.toMatch(/byteplus|kling/)
    }
    expect(new Set([arkUrl, currentUrl, legacyUrl]).size).toBe(3)
    // The gateway took every callback (204), signed ones included.
    expect(s.ark.callbacks.delivered.length).toBeGreaterThanOrEqual(3)
    expect(s.kling.callbacks.delivered.length).toBeGreaterThanOrEqual(6)
    for (const d of [...s.ark.callbacks.delivered, ...s.kling.callbacks.delivered]) expect(d.status).toBe(204)
    expect(s.kling.callbacks.delivered[0]!.headers["webhook-signature"]).toMatch(/^v1,/)
  }, 60_000)

  it(
    "duplicated and reordered callbacks, and two signatures during a rotation, change nothing but timing",
    async () => {
      s.ark.callbacks.options.delivery = "duplicate"
      s.kling.callbacks.options.delivery = "reorder"
      s.kling.callbacks.options.signature = "rotation"
      try {
        s.ark.scenarios.push({ stepMs: 300 })
        s.kling.scenarios.push({ stepMs: 300 })
        const arkBefore = s.ark.requests.filter((r) => r.method === "POST").length
        const klingBefore = s.kling.requests.filter((r) => r.method === "POST").length
        const tasks = await Promise.all([create(s.gw, ARK_MODEL), create(s.gw, KLING_MODEL)])
        for (const task of tasks) {
          const seen = await api(s.gw, { resource: task.key }).waitTask("video", task.id, undefined, {
            intervalMs: 100,
            deadlineMs: 15_000
          })
          expect(seen.at(-1)?.status).toBe("succeeded")
          expect(seen.at(-1)?.result?.videos).toHaveLength(1)
          expect(Date.now() - task.at).toBeLessThan(SLOW_POLL_MS / 2)
        }
        // One upstream task each: a callback never causes a submit.
        expect(s.ark.requests.filter((r) => r.method === "POST").length).toBe(arkBefore + 1)
        expect(s.kling.requests.filter((r) => r.method === "POST").length).toBe(klingBefore + 1)
      } finally {
        s.ark.callbacks.options.delivery = "each"
        s.kling.callbacks.options.delivery = "each"
        s.kling.callbacks.options.signature = "valid"
      }
    },
    60_000
  )

  it("callbacks with a bad or stale signature, or to an unknown token, are refused and trigger nothing", async () => {
    s.kling.callbacks.options.signature = "invalid"
    try {
      s.kling.scenarios.push({ stepMs: 300 })
      const from = s.kling.callbacks.delivered.length
      const task = await create(s.gw, KLING_MODEL)
      const before = await waiting(s.gw, task.id)
      const polls = () => s.kling.requests.filter((r) => r.method === "GET" && r.path === "/tasks").length
      const pollsBefore = polls()
      // The fake's task finishes and calls back (wrongly signed).
      await eventually(() => s.kling.callbacks.delivered.length > from, "the fake's callback was answered")
      const refused = s.kling.callbacks.delivered.slice(from)
      expect(refused.length).toBeGreaterThan(0)
      expect(refused.map((d) => d.status)).toEqual(refused.map(() => 400))

      // A stale timestamp with a right signature is refused too, as is no signature at all.
      const url = s.kling.requests.filter((r) => r.method === "POST").at(-1)!.body.options.callback_url as string
      const object = { id: before.upstream_id, status: "succeeded", message: "", external_id: task.id }
      const text = JSON.stringify(object)
      for (const signature of ["stale", "none"] as const) {
        const headers = {
          "content-type": "application/json",
          ...signatureHeaders({ signature, secret: SECRET }, text, "m1")
        }
        const reply = await fetch(url, { method: "POST", headers, body: text })
        expect(reply.status).toBe(400)
        expect((await reply.json()).error.code).toBe("invalid_callback")
      }

      // An unknown or altered token is answered like a path with no route, and reads nothing.
      const token = url.slice(url.lastIndexOf("/") + 1)
      const altered = token.slice(0, -1) + (token.endsWith("A") ? "B" : "A")
      for (const path of [`${CALLBACK_PATH}${altered}`, `${CALLBACK_PATH}klingai`, "/v1/no-such-route"]) {
        const reply = await fetch(`${s.gw.url}${path}`, { method: "POST", body: text })
        expect(reply.status).toBe(404)
        expect((await reply.json()).error).toMatchObject({
          code: "not_found",
          message: `No route for POST ${path}.`
        })
      }

      const after = await row(s.gw, task.id)
      expect(after).toMatchObject({ run_state: "waiting", run_at: before.run_at, nudged: false })
      expect(polls()).toBe(pollsBefore)
      const seen = await api(s.gw, { resource: task.key }).getVideo(task.id)
      expect(seen.status).toBe("in_progress")
    } finally {
      s.kling.callbacks.options.signature = "valid"
    }
  }, 60_000)

  it("a callback claiming success for a task still running upstream is only a reason to poll", async () => {
    s.ark.scenarios.push({ stepMs: 300, running: Infinity })
    const task = await create(s.gw, ARK_MODEL)
    const { upstream_id } = await waiting(s.gw, task.id)
    const url = s.ark.requests.filter((r) => r.method === "POST").at(-1)!.body.callback_url as string
    const listed = () =>
      s.ark.requests.filter((r) => r.method === "GET" && r.query["filter.task_ids"]?.includes(upstream_id!)).length
    // The fake's own "running" callback, sent at once, and the poll it brought are behind us before counting.
    await eventually(() => listed() > 0, "the poll the fake's own callback brought")
    const pollsBefore = listed()
    const lie = {
      id: upstream_id,
      status: "succeeded",
      content: { video_url: `${s.ark.url}/../tos/forged.mp4` },
      error: null
    }
    const reply = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(lie)
    })
    expect(reply.status).toBe(204)
    // The lie made the task due: it was polled at once, and the poll said it runs.
    await eventually(() => listed() > pollsBefore, "the poll the lie brought", { deadlineMs: 3_000, intervalMs: 50 })
    // The sleep is the scenario: a while after that poll in which the lie must not have finished the task.
    await sleep(300)
    const seen = await api(s.gw, { resource: task.key }).getVideo(task.id)
    expect(seen.status).toBe("in_progress")
    expect((await row(s.gw, task.id)).run_state).toBe("waiting")
  }, 60_000)

  it("a callback for a task being polled right now leaves its hold and brings the next poll forward", async () => {
    s.ark.scenarios.push({ stepMs: 300, running: Infinity })
    s.ark.callbacks.options.delivery = "none"
    try {
      const task = await create(s.gw, ARK_MODEL)
      const { upstream_id } = await waiting(s.gw, task.id)
      // As a poller holds it: moving its run_at would let another poller take it mid-poll.
      const held = Date.now() + 60_000
      await query(s.gw, (sql) => sql`UPDATE tasks SET run_state = 'polling', run_at = ${held} WHERE id = ${task.id}`)
      const url = s.ark.requests.filter((r) => r.method === "POST").at(-1)!.body.callback_url as string
      const reply = await fetch(url, { method: "POST", body: JSON.stringify({ id: upstream_id, status: "running" }) })
      expect(reply.status).toBe(204)
      const nudged = await row(s.gw, task.id)
      expect(nudged.nudged).toBe(true)
      expect(Number(nudged.run_at)).toBe(held)
      // The poll ends: the next one is due at once rather than after its backoff.
      const [{ attempt }] = await query<{ attempt: number }>(
        s.gw,
        (sql) => sql`SELECT attempt FROM tasks WHERE id = ${task.id}`
      )
      const now = Date.now()
      await s.gw.runtime.runPromise(
        Effect.flatMap(TaskQueue, (queue) => queue.reschedule({ id: task.id, attempt: attempt! }, now + 60_000, now))
      )
      const after = await row(s.gw, task.id)
      expect(after.nudged).toBe(false)
      expect(Number(after.run_at)).toBeLessThan(now + 1000)
    } finally {
      s.ark.callbacks.options.delivery = "each"
    }
  }, 60_000)
})

describe(`upstream callbacks never delivered: polling still finishes the tasks (${backend})`, () => {
  let s: Setup
  beforeAll(async () => {
    s = await start(300)
    s.ark.callbacks.options.delivery = "none"
    s.kling.callbacks.options.delivery = "none"
  }, 60_000)
  afterAll(async () => {
    await s?.close()
  })

  it("ark and kling tasks succeed by polling alone", async () => {
    s.ark.scenarios.push({ stepMs: 300 })
    s.kling.scenarios.push({ stepMs: 300 }, { stepMs: 300 })
    const tasks = await Promise.all([
      create(s.gw, ARK_MODEL),
      create(s.gw, KLING_MODEL),
      create(s.gw, KLING_LEGACY_MODEL)
    ])
    for (const task of tasks) {
      const seen = await api(s.gw, { resource: task.key }).waitTask("video", task.id, undefined, {
        intervalMs: 100,
        deadlineMs: 30_000
      })
      expect(seen.at(-1)?.status).toBe("succeeded")
    }
    expect(s.ark.callbacks.delivered).toHaveLength(0)
    expect(s.kling.callbacks.delivered).toHaveLength(0)
  }, 60_000)
})

describe("Standard Webhooks verification (Kling's callback signature)", () => {
  // The official test vector of Kling's callback signature documentation (Standard Webhooks).
  const vector = {
    secret: "whsec_dGVzdHNlY3JldHRlc3RzZWNyZXR0ZXN0c2VjcmV0MTI=",
    id: "9876543210",
    timestamp: "1781080794",
    body:
      `{"id":"1234567890","status":"succeeded","message":"","create_time":1781080778802,"update_time":1781080794151}`,
    signature: "v1,UsKlJP00XoQyOn410NM9xv34sP+Gl0jnOO9Lcpr7NJ4="
  }
  const verify = (signature: string, nowMs = 1781080794_000, secret = vector.secret) =>
    Effect.runPromise(Effect.either(verifyStandardWebhook(secret, {
      headers: { "webhook-id": vector.id, "webhook-timestamp": vector.timestamp, "webhook-signature": signature },
      body: new TextEncoder().encode(vector.body),
      now: nowMs
    })))

  it("accepts the official vector, alone or beside another signature (rotation)", async () => {
    expect(Either.isRight(await verify(vector.signature))).toBe(true)
    expect(Either.isRight(await verify(`v1,AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA= ${vector.signature}`))).toBe(
      true
    )
    // Within five minutes either way.
    expect(Either.isRight(await verify(vector.signature, 1781080794_000 + 299_000))).toBe(true)
    expect(Either.isRight(await verify(vector.signature, 1781080794_000 - 299_000))).toBe(true)
  })

  it("refuses another signature, another secret, a stale or future timestamp, and missing headers", async () => {
    expect(Either.isLeft(await verify("v1,UsKlJP00XoQyOn410NM9xv34sP+Gl0jnOO9Lcpr7NJ8="))).toBe(true)
    expect(Either.isLeft(await verify(vector.signature.replace("v1,", "v2,")))).toBe(true)
    expect(Either.isLeft(await verify(vector.signature, undefined, "whsec_" + btoa("another secret")))).toBe(true)
    expect(Either.isLeft(await verify(vector.signature, 1781080794_000 + 301_000))).toBe(true)
    expect(Either.isLeft(await verify(vector.signature, 1781080794_000 - 301_000))).toBe(true)
    expect(Either.isLeft(await verify(""))).toBe(true)
  })
})
