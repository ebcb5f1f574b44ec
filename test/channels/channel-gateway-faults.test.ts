import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { MISSING } from "../fakes/gateway.ts"
import { backend } from "../support/database.ts"
import {
  expectChargedOnce,
  expectNothingUpstream,
  expectRefunded,
  type FakeGatewayEnv,
  IMAGE,
  MODEL_TOKEN,
  RESOURCE_KEY,
  runTask,
  SHORT,
  startFakeGatewayEnv,
  videoTask
} from "../support/fakeGateway.ts"

/**
 * The `gateway` adapter against a fake upstream gateway's faults
 * (docs/adapters/gateway.md, Failures), and what chained gateways elsewhere got
 * wrong (a peer's `unknown` or missing status for a task it has just created
 * read as a failure): throttling with and without Retry-After, 5xx HTML pages,
 * time-outs, a create whose answer never arrives, upstream failures, expired
 * result links, unknown and missing statuses. Each is proven through the public
 * API: the task's status and error, the account's ledger, and nothing of the
 * upstream in what the caller reads. Faults are queued per route and used by
 * the next request, so tests run one task at a time unless their tasks'
 * outcomes are alike.
 */

let env: FakeGatewayEnv
beforeAll(async () => {
  env = await startFakeGatewayEnv()
}, 60_000)
afterAll(async () => {
  await env?.close()
})
const run = (prompt: string, model?: string) => runTask(env, videoTask(prompt, model))
const gaps = (times: ReadonlyArray<number>) => times.slice(1).map((t, i) => t - times[i]!)

describe(`the gateway channel's faults (${backend})`, () => {
  it(
    "a task runs with the sk- token on create, the ak_ key on the batch query and per url_auth on download",
    async () => {
      env.fake.lives.push({ prompt: "a signed result", urlAuth: "none" })
      const [asset, signed] = await Promise.all([run("an asset result"), run("a signed result")])
      for (const { creates, task, upstream } of [asset, signed]) {
        expect(task.status).toBe("succeeded")
        expect(upstream).toHaveLength(1)
        expect(creates).toHaveLength(1)
        expect(creates[0]!.headers.authorization).toBe(`Bearer ${MODEL_TOKEN}`)
        expect(creates[0]!.headers["idempotency-key"]).toBe(task.id)
        expect(creates[0]!.fields).toMatchObject({ model: "upstream-video-model", client_reference_id: task.id })
        expect(task.result!.videos[0].url.startsWith(env.gw.url)).toBe(true)
        expect(task.result!.videos[0].mime_type).toBe("video/mp4")
        expectNothingUpstream(env, task)
        await expectChargedOnce(env.gw, task.id)
      }
      const downloads = (id: string) =>
        env.fake.requests.filter((r) => r.method === "GET" && r.path.includes(id.slice(5)))
      expect(downloads(asset.upstream[0]!.id).map((r) => r.headers.authorization)).toEqual([`Bearer ${RESOURCE_KEY}`])
      expect(downloads(signed.upstream[0]!.id).map((r) => r.headers.authorization)).toEqual([undefined])
      const queries = env.fake.requests.filter((r) => r.path === "/v1/video/tasks/query")
      expect(queries.length).toBeGreaterThan(0)
      for (const q of queries) expect(q.headers.authorization).toBe(`Bearer ${RESOURCE_KEY}`)
    },
    60_000
  )

  it("an image task comes back as our own PNG", async () => {
    const body = {
      model: IMAGE,
      operation: "generation",
      input: { prompt: "an image upstream" },
      output: { size: "1024x1024", format: "png", count: 1 }
    }
    const { creates, task, upstream } = await runTask(env, body, "image")
    expect(task.status).toBe("succeeded")
    expect(upstream).toHaveLength(1)
    expect(creates[0]!.path).toBe("/v1/image/tasks")
    const png = new Uint8Array(await (await fetch(task.result!.images[0].url)).arrayBuffer())
    expect([...png.slice(1, 4)]).toEqual([0x50, 0x4e, 0x47])
    expectNothingUpstream(env, task)
  }, 60_000)

  it(
    "a throttled create waits as long as Retry-After asks, or the engine's backoff without it; charged once",
    async () => {
      env.fake.faults.create.push({ kind: "rate_limited", retryAfter: "1" }, { kind: "rate_limited" })
      const { creates, task, upstream } = await run("throttled create")
      expect(task.status).toBe("succeeded")
      expect(creates).toHaveLength(3)
      const [honoured, backoff] = gaps(creates.map((c) => c.at))
      expect(honoured).toBeGreaterThanOrEqual(950)
      expect(backoff).toBeLessThan(950)
      expect(upstream).toHaveLength(1)
      await expectChargedOnce(env.gw, task.id)
    },
    60_000
  )

  it("a throttled batch query is asked again no sooner than Retry-After says", async () => {
    env.fake.faults.query.push({ kind: "rate_limited", retryAfter: "2" })
    const { polls, task } = await run("throttled query")
    expect(task.status).toBe("succeeded")
    expect(gaps(polls)[0]).toBeGreaterThanOrEqual(1950)
  }, 60_000)

  it(
    "5xx HTML pages are retried; a create that always meets one fails retryable, refunded, nothing upstream",
    async () => {
      env.fake.faults.create.push({ kind: "html", status: 502 })
      env.fake.faults.query.push({ kind: "html", status: 503 })
      const healed = await run("a page then a video")
      expect(healed.task.status).toBe("succeeded")
      expect(healed.creates).toHaveLength(2)
      expect(healed.upstream).toHaveLength(1)

      env.fake.faults.create.push(...[502, 503, 504].map((status) => ({ kind: "html" as const, status })))
      const { creates, task, upstream } = await run("pages all the way")
      expect(creates).toHaveLength(3)
      expect(upstream).toHaveLength(0)
      expect(task).toMatchObject({ status: "failed", error: { code: "video_task_failed", retryable: true } })
      expectNothingUpstream(env, task)
      await expectRefunded(env.gw, task.id)
    },
    60_000
  )

  it(
    "a create that hangs, is reset, or whose answer never arrives is reconciled by find: one upstream task each",
    async () => {
      env.fake.faults.create.push({ kind: "hang" }, { kind: "lost" }, { kind: "reset" })
      const runs = await Promise.all(["in doubt one", "in doubt two", "in doubt three"].map((p) => run(p)))
      for (const { creates, task, upstream } of runs) {
        expect(task.status).toBe("succeeded")
        // The find is the same create with the same Idempotency-Key: the upstream replays, never runs it twice.
        expect(creates).toHaveLength(2)
        expect(new Set(creates.map((c) => c.headers["idempotency-key"]))).toEqual(new Set([task.id]))
        expect(upstream).toHaveLength(1)
        expectNothingUpstream(env, task)
        await expectChargedOnce(env.gw, task.id)
      }
    },
    60_000
  )

  it("a batch query that hangs is cut short by the poll time-out; the task still succeeds", async () => {
    env.fake.faults.query.push({ kind: "hang" })
    const { creates, polls, task } = await run("slow upstream")
    expect(task.status).toBe("succeeded")
    expect(creates).toHaveLength(1)
    expect(gaps(polls)[0]).toBeGreaterThanOrEqual(1900)
  }, 60_000)

  it("an upstream failure fails the task with the upstream's spec code and retryable, refunded", async () => {
    const error = { code: "content_policy_violation", message: "The prompt was refused.", retryable: false }
    env.fake.lives.push({ prompt: "refused upstream", statuses: ["queued", "failed"], error })
    const { task, upstream } = await run("refused upstream")
    expect(upstream).toHaveLength(1)
    expect(task).toMatchObject({ status: "failed", error })
    expectNothingUpstream(env, task)
    await expectRefunded(env.gw, task.id)
  }, 60_000)

  it("done but no output fails with the refund", async () => {
    env.fake.lives.push({ prompt: "filtered", statuses: ["succeeded"], noOutput: true })
    const { task } = await run("filtered")
    expect(task).toMatchObject({ status: "failed", error: { code: "video_task_failed", retryable: true } })
    expectNothingUpstream(env, task)
    await expectRefunded(env.gw, task.id)
  }, 60_000)

  it("unknown and missing statuses are polled again, then the task succeeds", async () => {
    env.fake.lives.push({ prompt: "late bloomer", statuses: [MISSING, "unknown", null, "in_progress", "succeeded"] })
    const { polls, task } = await run("late bloomer")
    expect(task.status).toBe("succeeded")
    expect(polls.length).toBeGreaterThanOrEqual(5)
    await expectChargedOnce(env.gw, task.id)
  }, 60_000)

  it("unknown or missing statuses until the deadline fail the task, retryable, refunded", async () => {
    const prompts = { unknown: "forever unknown", null: "no status at all", missing: "never found" }
    env.fake.lives.push(
      { prompt: prompts.unknown, statuses: ["unknown"] },
      { prompt: prompts.null, statuses: [null] },
      { prompt: prompts.missing, statuses: [MISSING] }
    )
    const runs = await Promise.all(Object.values(prompts).map((p) => run(p, SHORT)))
    for (const { polls, task } of runs) {
      // Never failed on the first poll (new-api #5045, PR #5927): polled until the 3 s deadline.
      expect(polls.length).toBeGreaterThanOrEqual(3)
      expect(polls.at(-1)! - polls[0]!).toBeGreaterThanOrEqual(2000)
      expect(task).toMatchObject({ status: "failed", error: { code: "video_task_failed", retryable: true } })
      expectNothingUpstream(env, task)
      await expectRefunded(env.gw, task.id)
    }
  }, 60_000)

  it(
    "an expired result link is fetched again after the next poll; one that stays expired fails at the deadline",
    async () => {
      env.fake.faults.content.push({ kind: "status", status: 403, body: { error: "Request has expired" } })
      const healed = await run("expired once")
      expect(healed.task.status).toBe("succeeded")
      expect(healed.polls.length).toBeGreaterThanOrEqual(4)
      await expectChargedOnce(env.gw, healed.task.id)

      env.fake.lives.push({ prompt: "long gone", statuses: ["succeeded"], urlAuth: "none", expired: true })
      const { task } = await run("long gone", SHORT)
      expect(task).toMatchObject({ status: "failed", error: { code: "video_task_failed", retryable: true } })
      expectNothingUpstream(env, task)
      await expectRefunded(env.gw, task.id)
    },
    60_000
  )

  it("our credentials refused upstream: failed retryable, refunded, no upstream task", async () => {
    env.fake.faults.create.push({ kind: "status", status: 401, body: { error: { code: "invalid_api_key" } } })
    const { creates, task, upstream } = await run("wrong key")
    expect(creates).toHaveLength(1)
    expect(upstream).toHaveLength(0)
    expect(task).toMatchObject({ status: "failed", error: { code: "video_task_failed", retryable: true } })
    expectNothingUpstream(env, task)
    await expectRefunded(env.gw, task.id)
  }, 60_000)
})
