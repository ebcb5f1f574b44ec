import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { backend } from "../support/database.ts"
import {
  createsOf,
  DOWN,
  expectNothingUpstream,
  expectRefunded,
  FAMV,
  runRunway,
  type RunwaySetup,
  startRunwayGateway,
  tasksOf,
  video
} from "../support/runway.ts"
import { ledgerOf } from "../support/tasks.ts"

/**
 * The `runway` adapter against the fake Runway API's faults
 * (docs/adapters/runway.md, Failures and Tests): 429 with and without a
 * Retry-After, 5xx pages, a reset, a create that hangs or whose answer never
 * comes, a refused key and a refused request, a slow task read, a port that
 * refuses connections. Faults are queued per route and used by the next
 * request, so tests that queue create faults run one task at a time or tasks
 * whose outcomes are alike.
 */

let r: RunwaySetup
beforeAll(async () => {
  r = await startRunwayGateway()
}, 60_000)
afterAll(async () => {
  await r?.close()
})

const run = (prompt: string, model = FAMV) => runRunway(r, video(model, { prompt }, { duration: 4 }))
const gaps = (requests: ReadonlyArray<{ readonly at: number }>) =>
  requests.slice(1).map((q, i) => q.at - requests[i]!.at)

describe(`the runway channel's faults (${backend})`, () => {
  it("a throttled create (429) waits as long as Retry-After asks, else the engine's backoff; one upstream task, charged once", async () => {
    r.fake.faults.create.push({ kind: "rate_limited", retryAfter: "1" }, { kind: "rate_limited" })
    const { task } = await run("throttled create")
    expect(task.status).toBe("succeeded")
    const creates = createsOf(r, "throttled create")
    expect(creates).toHaveLength(3)
    const [honoured, backoff] = gaps(creates)
    expect(honoured).toBeGreaterThanOrEqual(950)
    expect(backoff).toBeLessThan(950)
    expect(tasksOf(r, "throttled create")).toHaveLength(1)
    expect((await ledgerOf(r.gw, task.id)).map((l) => l.kind)).toEqual(["charge"])
    expectNothingUpstream(r, task)
  })

  it("5xx: a 502 page on the create is retried, a 503 on a task read asked again; one upstream task", async () => {
    r.fake.faults.create.push({ kind: "html", status: 502 })
    r.fake.faults.task.push({ kind: "html", status: 503 }, { kind: "rate_limited", retryAfter: "1" })
    const { task } = await run("a page then a video")
    expect(task.status).toBe("succeeded")
    expect(createsOf(r, "a page then a video")).toHaveLength(2)
    expect(tasksOf(r, "a page then a video")).toHaveLength(1)
    expect((await ledgerOf(r.gw, task.id)).map((l) => l.kind)).toEqual(["charge"])
    expectNothingUpstream(r, task)
  })

  it("a create that always meets 503 fails retryable with its refund, nothing made upstream", async () => {
    r.fake.faults.create.push(...[503, 502, 503].map((status) => ({ kind: "html" as const, status })))
    const { task } = await run("pages all the way")
    expect(createsOf(r, "pages all the way")).toHaveLength(3)
    expect(tasksOf(r, "pages all the way")).toHaveLength(0)
    expect(task).toMatchObject({ status: "failed", error: { code: "video_task_failed", retryable: true } })
    expectNothingUpstream(r, task)
    await expectRefunded(r.gw, task.id)
  })

  it("a create that hangs, is reset, or whose answer never comes (or a 504) is never sent again: retryable, refunded", async () => {
    r.fake.faults.create.push(
      { kind: "hang" },
      { kind: "lost" },
      { kind: "reset" },
      { kind: "status", status: 504, body: { error: "overloaded" } }
    )
    const prompts = ["in doubt one", "in doubt two", "in doubt three", "in doubt four"]
    const runs = await Promise.all(prompts.map((prompt) => run(prompt)))
    for (const [i, { task }] of runs.entries()) {
      expect(createsOf(r, prompts[i]!)).toHaveLength(1)
      expect(task).toMatchObject({ status: "failed", error: { code: "video_task_failed", retryable: true } })
      expectNothingUpstream(r, task)
      await expectRefunded(r.gw, task.id)
    }
    // The lost one did make a task upstream: exactly one, which nobody created again.
    expect(prompts.filter((p) => tasksOf(r, p).length > 0)).toHaveLength(1)
  })

  it("a task read slower than poll_s is cut short and asked again; the task still succeeds", async () => {
    r.fake.faults.task.push({ kind: "hang" })
    const { task } = await run("slow read")
    expect(task.status).toBe("succeeded")
    expect(tasksOf(r, "slow read")).toHaveLength(1)
  })

  it("refused at the door: the key (401) is retryable, Runway's 400 final; both refunded, one create each", async () => {
    r.fake.faults.create.push({
      kind: "status",
      status: 401,
      body: { error: "The API key you provided is incorrect." }
    })
    const unauthorised = await run("wrong key")
    expect(unauthorised.task.error).toMatchObject({ code: "video_task_failed", retryable: true })
    r.fake.faults.create.push({ kind: "status", status: 400, body: { error: "promptImage could not be fetched." } })
    const refused = await run("refused request")
    expect(refused.task.error).toMatchObject({ code: "video_task_failed", retryable: false })
    for (const [prompt, { task }] of [["wrong key", unauthorised], ["refused request", refused]] as const) {
      expect(createsOf(r, prompt)).toHaveLength(1)
      expect(task.status).toBe("failed")
      expectNothingUpstream(r, task)
      await expectRefunded(r.gw, task.id)
    }
  })

  it("a lapsed output link (403) is read again from a fresh poll: the task still succeeds", async () => {
    r.fake.faults.output.push({ kind: "status", status: 403, body: { error: "expired" } })
    const { task } = await run("lapsed link")
    expect(task.status).toBe("succeeded")
    const [upstream] = tasksOf(r, "lapsed link")
    expect(r.fake.requests.filter((q) => q.path === `/outputs/${upstream!.id}.mp4`).length).toBeGreaterThanOrEqual(2)
  })

  it("a channel that refuses connections: retried, then failed retryable with its refund", async () => {
    const before = r.fake.requests.length
    const { task } = await run("nobody home", DOWN)
    expect(task).toMatchObject({ status: "failed", error: { code: "video_task_failed", retryable: true } })
    expect(r.fake.requests.length).toBe(before)
    expectNothingUpstream(r, task)
    await expectRefunded(r.gw, task.id)
  })
})
