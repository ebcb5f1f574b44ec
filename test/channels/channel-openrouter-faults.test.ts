import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { Fault, Life } from "../fakes/openrouter.ts"
import { createAccount, operator } from "../support/adminApi.ts"
import { api } from "../support/api.ts"
import { backend } from "../support/database.ts"
import { eventually } from "../support/eventually.ts"
import {
  engineRow,
  expectChargedOnce,
  expectNothingUpstream,
  expectRefunded,
  type OpenRouterSetup,
  runOpenRouter,
  startOpenRouterGateway
} from "../support/openrouter.ts"
import { query } from "../support/tasks.ts"
import { fieldOf } from "../support/upstream.ts"

/**
 * The `openrouter` adapter against the fake OpenRouter when things go wrong
 * (docs/adapters/openrouter.md, States, Failures, Callbacks): every terminal
 * status of a job, refusals of the create in OpenRouter's envelope (bad
 * request, key, credits, a safety refusal), creates whose answer is lost,
 * reads and downloads that fail, failover to the next channel; and the
 * webhooks OpenRouter posts when a job ends, which only hasten the poll.
 * Each case states the task's final status, `retryable` and the ledger.
 */

const MODEL = "provx-famV-3.1-fast-720p"
/** OpenRouter first, the sandbox second. */
const WITH_NEXT = "provx-famV-3.1-fast-1080p"

let r: OpenRouterSetup

beforeAll(async () => {
  const onOpenRouter = { channel: "aggregator", upstream_model: "google/veo-3.1-fast" }
  r = await startOpenRouterGateway(
    { [MODEL]: [onOpenRouter], [WITH_NEXT]: [onOpenRouter, "sandbox"] },
    // Each test reaches OpenRouter, never skipped after an earlier test's refusals.
    { breaker_cooldown_s: 0 }
  )
}, 60_000)
afterAll(async () => {
  await r?.close()
})

const run = (prompt: string, { content = [], create = [], life, model = MODEL, poll = [] }: {
  life?: Omit<Life, "prompt">
  create?: Array<Fault>
  poll?: Array<Fault>
  content?: Array<Fault>
  model?: string
} = {}) => {
  if (life) r.fake.lives.push({ ...life, prompt })
  r.fake.faults.create.push(...create)
  r.fake.faults.poll.push(...poll)
  r.fake.faults.content.push(...content)
  return runOpenRouter(r, { model, operation: "generation", input: { prompt }, output: { duration: 4 } })
}

const jobsOf = (prompt: string) => [...r.fake.jobs.values()].filter((j) => j.body.prompt === prompt)

const expectFailed = async (task: any, retryable: boolean) => {
  expect(task).toMatchObject({ status: "failed", error: { code: "video_task_failed", retryable } })
  expectNothingUpstream(r, task)
  await expectRefunded(r.gw, task.id)
}

describe(`the openrouter channel: states and faults (${backend})`, () => {
  it("failed, cancelled and expired jobs end the task with its refund; only a safety refusal is final", async () => {
    const cases: Array<[Life, boolean]> = [
      [{ statuses: ["pending", "failed"], error: "Video was flagged by the provider's content moderation" }, false],
      [{ statuses: ["pending", "in_progress", "failed"], error: "Provider returned error: GPU worker crashed" }, true],
      [{ statuses: ["pending", "cancelled"] }, true],
      [{ statuses: ["pending", "expired"] }, true]
    ]
    for (const [life, retryable] of cases) {
      const prompt = `ending ${life.statuses.at(-1)} ${retryable}`
      const { creates, task } = await run(prompt, { life })
      expect(creates).toHaveLength(1)
      await expectFailed(task, retryable)
      expect(task.error?.message).not.toMatch(/GPU|moderation|Provider/)
      const view = await operator(r.gw).task(task.id)
      expect(fieldOf(view.attempts.at(-1)?.last_answer, "status")).toBe(life.statuses.at(-1))
    }
  })

  it("a refused request (400) and a safety refusal (403 with its metadata) are sent once and final", async () => {
    const invalid = await run("refused input", {
      create: [{ kind: "error", status: 400, message: "duration 7 is not supported" }]
    })
    expect(invalid.creates).toHaveLength(1)
    await expectFailed(invalid.task, false)
    const flagged = await run("flagged input", {
      create: [{
        kind: "error",
        status: 403,
        message: "Input was flagged",
        metadata: { reasons: ["violence"], flagged_input: "flagged input" }
      }]
    })
    expect(flagged.creates).toHaveLength(1)
    await expectFailed(flagged.task, false)
    expect(flagged.task.error?.message).toMatch(/content safety policy/)
  })

  it("a refused key (401) or no credits (402) are sent once: retryable without a next channel, moved with one", async () => {
    for (const status of [401, 402]) {
      const { creates, task } = await run(`refused with ${status}`, {
        create: [{ kind: "error", status, message: status === 402 ? "Insufficient credits" : "User not found." }]
      })
      expect(creates).toHaveLength(1)
      await expectFailed(task, true)
    }
    // With the sandbox next: the task moves there, charged once, nothing refunded.
    const { creates, task } = await run("no credits, then the sandbox", {
      model: WITH_NEXT,
      create: [{ kind: "error", status: 402, message: "Insufficient credits" }]
    })
    expect(creates).toHaveLength(1)
    expect(task.status).toBe("succeeded")
    await expectChargedOnce(r.gw, task.id)
    const view = await operator(r.gw).task(task.id)
    expect(view.attempts.map((a) => a.channel)).toEqual(["aggregator", "sandbox"])
  })

  it("a create that hangs, is cut off after it was read, is lost or meets a 524 is never sent again", async () => {
    const faults: Array<Fault> = [{ kind: "hang" }, { kind: "reset" }, { kind: "lost" }, { kind: "html", status: 524 }]
    for (const fault of faults) {
      const prompt = `create answered by ${fault.kind}`
      const { creates, task } = await run(prompt, { create: [fault] })
      expect(creates).toHaveLength(1)
      expect(jobsOf(prompt).length).toBeLessThanOrEqual(1)
      await expectFailed(task, true)
      expect((await engineRow(r.gw, task.id)).upstream_id).toBe(null)
    }
    // The lost one was created upstream: the refund stands, and nothing was sent twice.
    expect(jobsOf("create answered by lost")).toHaveLength(1)
  })

  it("reads that are throttled, answered by a proxy page or never answered are asked again; the task succeeds", async () => {
    const poll: Array<Fault> = [{ kind: "rate_limited", retryAfter: "1" }, { kind: "html", status: 502 }, {
      kind: "hang"
    }]
    const { creates, task } = await run("reads that fail", { poll })
    expect(task.status).toBe("succeeded")
    expect(creates).toHaveLength(1)
    await expectChargedOnce(r.gw, task.id)
    expectNothingUpstream(r, task)
  })

  it("content not ready (409) or broken (502) is fetched again; content gone (410) fails the task with its refund", async () => {
    const again = await run("content later", {
      content: [{ kind: "error", status: 409, message: "not completed" }, { kind: "error", status: 502 }]
    })
    expect(again.task.status).toBe("succeeded")
    const id = (await engineRow(r.gw, again.task.id)).upstream_id!
    expect(r.fake.requests.filter((q) => q.path === `/api/v1/videos/${id}/content`).length).toBeGreaterThanOrEqual(3)
    await expectChargedOnce(r.gw, again.task.id)

    const gone = await run("content gone", { content: [{ kind: "error", status: 410, message: "expired" }] })
    await expectFailed(gone.task, true)
    expect(gone.task.error?.message).toMatch(/expired/)
  })
})

describe(`the openrouter channel: webhooks with polling slowed to 20 s (${backend})`, () => {
  const SECRET = "whsec-openrouter-workspace-secret-0123456789"
  let w: OpenRouterSetup
  beforeAll(async () => {
    w = await startOpenRouterGateway(
      { [MODEL]: [{ channel: "aggregator", upstream_model: "google/veo-3.1-fast" }] },
      {
        callbacks: true,
        credentials: { api_key: { env: "OPENROUTER_KEY" }, webhook_secret: { env: "OPENROUTER_WEBHOOK_SECRET" } }
      },
      { poll_interval_ms: 20_000 },
      { OPENROUTER_WEBHOOK_SECRET: SECRET }
    )
    w.fake.callbacks.secret = SECRET
  }, 60_000)
  afterAll(async () => {
    await w?.close()
  })

  const create = async (prompt: string) => {
    w.fake.lives.push({ prompt, statuses: ["pending", "in_progress", "completed"], stepMs: 300 })
    const acct = await createAccount(w.gw, { name: "webhooks", wallet_credits: 100 })
    const created = await api(w.gw, acct).createVideoReply({
      model: MODEL,
      operation: "generation",
      input: { prompt },
      output: { duration: 4 }
    })
    expect(created.status).toBe(202)
    return { acct, id: created.task.id, at: Date.now() }
  }

  it("a signed webhook makes the task due at once: done long before its first scheduled poll, one job", async () => {
    const { acct, at, id } = await create("called back")
    const task = (await api(w.gw, acct).waitTask("video", id, undefined, { intervalMs: 100 })).at(-1)!
    expect(task.status).toBe("succeeded")
    // Far sooner than the 20 s poll: the webhook did it.
    expect(Date.now() - at).toBeLessThan(15_000)
    const [sent] = w.fake.requests.filter((q) => q.method === "POST" && q.body.prompt === "called back")
    expect(sent!.body.callback_url).toMatch(new RegExp(`^${w.gw.url}/v1/upstream-callbacks/[A-Za-z0-9_-]+$`))
    const job = (await engineRow(w.gw, id)).upstream_id
    const delivered = w.fake.callbacks.delivered.filter((d) => d.body.data.id === job)
    expect(delivered.length).toBeGreaterThanOrEqual(1)
    expect(delivered.every((d) => d.status === 204)).toBe(true)
    expect(delivered[0]!.headers["x-openrouter-signature"]).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/)
    expect(delivered[0]!.body).toMatchObject({ type: "video.generation.completed", data: { status: "completed" } })
    expect(w.fake.requests.filter((q) => q.method === "POST" && q.body.prompt === "called back")).toHaveLength(1)
  })

  it("a webhook with a wrong, stale or no signature is refused (400) and hastens nothing", async () => {
    for (const signature of ["invalid", "stale", "none"] as const) {
      w.fake.callbacks.signature = signature
      try {
        const from = w.fake.callbacks.delivered.length
        const { acct, id } = await create(`wrongly signed ${signature}`)
        await eventually(() => w.fake.callbacks.delivered.length > from, "the fake's webhook was answered")
        expect(w.fake.callbacks.delivered.slice(from).map((d) => d.status)).toEqual([400])
        const [row] = await query<{ run_state: string; nudged: boolean }>(
          w.gw,
          (sql) => sql`SELECT run_state, nudged FROM tasks WHERE id = ${id}`
        )
        expect(row).toMatchObject({ run_state: "waiting", nudged: false })
        expect((await api(w.gw, { resource: acct.resource.key }).getVideo(id)).status).toBe("in_progress")
      } finally {
        w.fake.callbacks.signature = "valid"
      }
    }
  })
})
