import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { operator } from "../support/adminApi.ts"
import { backend } from "../support/database.ts"
import {
  expectChargedOnce,
  expectNothingUpstream,
  expectRefunded,
  hailuoTask,
  M768,
  type MinimaxSetup,
  runMinimax,
  startMinimaxGateway
} from "../support/minimax.ts"

/**
 * The `minimax` adapter against the fake MiniMax API's faults
 * (docs/adapters/minimax.md, Failures and Tests): MiniMax's rate limit (HTTP
 * 200, 1002) and a 429 with Retry-After, 5xx pages, a create that hangs, is
 * reset or whose answer is lost, refusals by code (sensitive content, key,
 * balance, parameters), failed generations, a broken retrieve and a lapsed
 * download link. Faults are queued per route and used by the next request,
 * so tests that queue create faults run one task at a time or tasks whose
 * outcomes are alike.
 */

let env: MinimaxSetup
beforeAll(async () => {
  env = await startMinimaxGateway()
}, 120_000)
afterAll(async () => {
  await env?.close()
})

const run = (body: Record<string, unknown>) => runMinimax(env, body)
const gaps = (requests: ReadonlyArray<{ readonly at: number }>) =>
  requests.slice(1).map((r, i) => r.at - requests[i]!.at)
const upstreamTasks = (prompt: string) => [...env.fake.tasks.values()].filter((t) => t.body.prompt === prompt)

describe(`the minimax channel's faults (${backend})`, () => {
  it(
    "MiniMax's rate limit (1002) and a 429 with Retry-After: created again, Retry-After honoured, one task",
    async () => {
      env.fake.faults.create.push({ kind: "rate_limited" }, { kind: "http429", retryAfter: "1" })
      const { creates, task } = await run(hailuoTask(M768, "throttled create"))
      expect(task.status).toBe("succeeded")
      expect(creates).toHaveLength(3)
      expect(gaps(creates)[1]).toBeGreaterThanOrEqual(950)
      expect(upstreamTasks("throttled create")).toHaveLength(1)
      await expectChargedOnce(env.gw, task.id)
      expectNothingUpstream(env, task)
    },
    90_000
  )

  it("a 5xx page on a create and on a query: created again and asked again, one task, it succeeds", async () => {
    env.fake.faults.create.push({ kind: "html", status: 502 })
    env.fake.faults.query.push({ kind: "html", status: 503 }, { kind: "rate_limited" })
    const { creates, task } = await run(hailuoTask(M768, "a page then a video"))
    expect(task.status).toBe("succeeded")
    expect(creates).toHaveLength(2)
    expect(upstreamTasks("a page then a video")).toHaveLength(1)
    await expectChargedOnce(env.gw, task.id)
    expectNothingUpstream(env, task)
  }, 90_000)

  it("server errors (1013) on every create: retried, then failed retryable with its refund", async () => {
    env.fake.faults.create.push(...[1, 2, 3].map(() => ({ kind: "code" as const, code: 1013, message: "internal" })))
    const { creates, task } = await run(hailuoTask(M768, "always broken"))
    expect(creates).toHaveLength(3)
    expect(task).toMatchObject({ status: "failed", error: { code: "video_task_failed", retryable: true } })
    expect(upstreamTasks("always broken")).toHaveLength(0)
    await expectRefunded(env.gw, task.id)
    expectNothingUpstream(env, task)
  }, 90_000)

  it(
    "a create that hangs, is reset, or whose answer never arrives is never sent again: retryable, refunded",
    async () => {
      env.fake.faults.create.push({ kind: "hang" }, { kind: "lost" }, { kind: "reset" })
      const prompts = ["in doubt one", "in doubt two", "in doubt three"]
      const runs = await Promise.all(prompts.map((prompt) => run(hailuoTask(M768, prompt))))
      for (const [i, { task }] of runs.entries()) {
        expect(env.fake.requests.filter((r) => r.method === "POST" && r.body.prompt === prompts[i])).toHaveLength(1)
        expect(task).toMatchObject({ status: "failed", error: { code: "video_task_failed", retryable: true } })
        expectNothingUpstream(env, task)
        await expectRefunded(env.gw, task.id)
      }
      // The lost one did create a task upstream: exactly one, which nobody submits again.
      expect(prompts.filter((p) => upstreamTasks(p).length > 0)).toHaveLength(1)
    },
    90_000
  )

  it("refused by code: sensitive content and invalid parameters are final, the key or balance retryable", async () => {
    const cases = [
      { code: 1026, message: "input new_sensitive", retryable: false, says: /content safety/ },
      { code: 2013, message: "invalid params, prompt", retryable: false, says: /refused the parameters/ },
      { code: 1004, message: "login fail", retryable: true, says: /temporarily unavailable/ },
      { code: 1008, message: "insufficient balance", retryable: true, says: /temporarily unavailable/ }
    ]
    for (const c of cases) {
      env.fake.faults.create.push({ kind: "code", code: c.code, message: c.message })
      const prompt = `refused with ${c.code}`
      const { creates, task } = await run(hailuoTask(M768, prompt))
      expect(creates).toHaveLength(1)
      expect(task).toMatchObject({ status: "failed", error: { code: "video_task_failed", retryable: c.retryable } })
      expect(task.error?.message).toMatch(c.says)
      expectNothingUpstream(env, task)
      await expectRefunded(env.gw, task.id)
      // Operators see MiniMax's own code and words.
      const view = await operator(env.gw).task(task.id)
      expect(JSON.stringify(view.attempts)).toContain(c.message)
    }
  }, 90_000)

  it("a generation MiniMax ends Fail: a sensitive output (1027) is final, any other retryable; refunded", async () => {
    env.fake.lives.push(
      {
        prompt: "flagged output",
        statuses: ["Processing", "Fail"],
        failCode: { code: 1027, message: "output new_sensitive" }
      },
      { prompt: "broken run", statuses: ["Queueing", "Fail"] }
    )
    const [flagged, broken] = await Promise.all([
      run(hailuoTask(M768, "flagged output")),
      run(hailuoTask(M768, "broken run"))
    ])
    expect(flagged!.task.error).toMatchObject({ code: "video_task_failed", retryable: false })
    expect(flagged!.task.error?.message).toMatch(/content safety/)
    expect(broken!.task.error).toMatchObject({ code: "video_task_failed", retryable: true })
    for (const { task } of [flagged!, broken!]) {
      expect(task.status).toBe("failed")
      expectNothingUpstream(env, task)
      await expectRefunded(env.gw, task.id)
    }
  }, 90_000)

  it("a retrieve that fails or is throttled is asked again at the next poll; the task succeeds", async () => {
    env.fake.faults.retrieve.push({ kind: "rate_limited" }, { kind: "html", status: 500 })
    const { task, requests } = await run(hailuoTask(M768, "retrieved at last"))
    expect(task.status).toBe("succeeded")
    expect(requests.filter((r) => r.path === "/v1/files/retrieve").length).toBeGreaterThanOrEqual(3)
    await expectChargedOnce(env.gw, task.id)
  }, 90_000)

  it("a download link that has lapsed (403, 404) fails the task with its refund", async () => {
    env.fake.lives.push(
      { prompt: "gone 403", statuses: ["Success"], expired: 403 },
      { prompt: "gone 404", statuses: ["Success"], expired: 404 }
    )
    const runs = await Promise.all(["gone 403", "gone 404"].map((p) => run(hailuoTask(M768, p))))
    for (const { task } of runs) {
      expect(task.status).toBe("failed")
      expect(task.error).toEqual({
        code: "video_task_failed",
        message: "The generated video expired before it could be stored.",
        retryable: true
      })
      expectNothingUpstream(env, task)
      await expectRefunded(env.gw, task.id)
    }
  }, 90_000)
})
