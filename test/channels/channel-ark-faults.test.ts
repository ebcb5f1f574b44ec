import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { fromCreateStatus } from "../../channels/ark/Failures.ts"
import type { Fault, Scenario } from "../fakes/ark.ts"
import { operator } from "../support/adminApi.ts"
import {
  ARK_KEY,
  type ArkSetup,
  engineRow,
  expectNothingUpstream,
  expectRefunded,
  runArk,
  startArkGateway,
  UPSTREAM
} from "../support/ark.ts"
import { backend } from "../support/database.ts"
import { eventually } from "../support/eventually.ts"
import { ledgerOf } from "../support/tasks.ts"
import { fieldOf } from "../support/upstream.ts"

/**
 * The `ark` adapter against the fake Ark when things go wrong
 * (docs/adapters/ark.md, States and polling, Failures): every terminal status,
 * throttling, proxy pages, lost answers, refusals, a key Ark does not know, a
 * lapsed result link. Each case states the task's final status, error code,
 * `retryable` and what the ledger holds.
 */

const MAIN = "provy-famS-2.0-480p"
const FAILOVER = "provy-famS-2.0-720p"
const SHORT = "provy-famS-2.0-fast-480p"

let ark: ArkSetup

beforeAll(async () => {
  ark = await startArkGateway({
    [MAIN]: [{ channel: "byteplus", upstream_model: UPSTREAM }],
    [FAILOVER]: [{ channel: "byteplus-elsewhere", upstream_model: UPSTREAM }, "sandbox"],
    [SHORT]: [{ channel: "byteplus-short", upstream_model: UPSTREAM }]
  }, {
    "byteplus-elsewhere": { credentials: { api_key: { env: "ARK_WRONG_KEY" } } },
    "byteplus-short": { timeouts: { submit_s: 2, poll_s: 2, deadline_s: 3 } }
  })
}, 60_000)
afterAll(async () => {
  await ark?.close()
})

const request = (prompt: string, model = MAIN) => ({
  model,
  operation: "generation",
  input: { prompt },
  output: { duration: 4 }
})

const run = (prompt: string, { model = MAIN, scenario, create = [], poll = [] }: {
  model?: string
  scenario?: Scenario
  create?: Array<Fault>
  poll?: Array<Fault>
} = {}) => {
  if (scenario) ark.fake.scenarios.push(scenario)
  ark.fake.faults.create.push(...create)
  ark.fake.faults.poll.push(...poll)
  return runArk(ark, request(prompt, model))
}

const upstreamTasksOf = (prompt: string) =>
  [...ark.fake.tasks.values()].filter((t) => t.body.content[0].text === prompt)

const expectFailed = async (task: any, retryable: boolean) => {
  expect(task).toMatchObject({ status: "failed", error: { code: "video_task_failed", retryable } })
  expectNothingUpstream(ark.fake, task)
  await expectRefunded(ark.gw, task.id)
}

describe(`the ark channel: states and faults (${backend})`, () => {
  it("failed, expired and done-without-video end the task with its refund; only safety refusals are final", async () => {
    const cases: Array<[Scenario, string, boolean]> = [
      [
        { end: "failed", error: { code: "OutputVideoSensitiveContentDetected.PolicyViolation", message: "x" } },
        "failed",
        false
      ],
      [{ end: "failed", error: { code: "InternalServiceError", message: "boom" } }, "failed", true],
      [{ end: "expired" }, "expired", true],
      [{ end: "no_video" }, "succeeded", true]
    ]
    for (const [scenario, upstreamStatus, retryable] of cases) {
      const { creates, seen, task } = await run(`ending ${upstreamStatus} ${retryable}`, { scenario })
      // queued and running were seen as in_progress on the way.
      expect(seen.some((t) => t.status === "in_progress")).toBe(true)
      expect(creates).toHaveLength(1)
      await expectFailed(task, retryable)
      const view = await operator(ark.gw).task(task.id)
      expect(fieldOf(view.attempts.at(-1)?.last_answer, "status")).toBe(upstreamStatus)
    }
  })

  it("a task cancelled upstream (DELETE while queued) fails retryable with its refund", async () => {
    ark.fake.scenarios.push({ queued: Infinity })
    const running = runArk(ark, request("to be cancelled"))
    await eventually(() => upstreamTasksOf("to be cancelled").some((t) => t.observed > 0), "polled", {
      deadlineMs: 10_000,
      intervalMs: 50
    })
    const deleted = await fetch(
      `${ark.fake.url}/contents/generations/tasks/${upstreamTasksOf("to be cancelled")[0]!.id}`,
      {
        method: "DELETE",
        headers: { authorization: `Bearer ${ARK_KEY}` }
      }
    )
    expect(deleted.status).toBe(200)
    await expectFailed((await running).task, true)
  })

  it("a status Ark does not document is polled again until the deadline, then fails with the refund", async () => {
    const { task } = await run("a status never seen", {
      model: SHORT,
      scenario: { queued: 0, running: 0, end: "unknown", status: "paused" }
    })
    await expectFailed(task, true)
    expect(upstreamTasksOf("a status never seen")[0]!.observed).toBeGreaterThan(1)
    const view = await operator(ark.gw).task(task.id)
    expect(view.attempts[0]).toMatchObject({ outcome: "deadline" })
    expect(fieldOf(view.attempts[0]?.last_answer, "status")).toBe("paused")
  })

  it("polls answered with garbage (200, no Ark answer) go on until the deadline, then the task fails with the refund", async () => {
    // More than the 3 s deadline can use: every poll of the task meets one.
    const poll: Array<Fault> = Array.from({ length: 200 }, () => ({ kind: "garbage" }))
    const before = ark.fake.requests.length
    const { creates, task } = await run("garbage answers", { model: SHORT, poll })
    const polls = ark.fake.requests.slice(before).filter((r) => r.method === "GET").length
    ark.fake.faults.poll.splice(0)
    await expectFailed(task, true)
    expect(creates).toHaveLength(1)
    expect(polls).toBeGreaterThan(1)
    const view = await operator(ark.gw).task(task.id)
    expect(view.attempts[0]).toMatchObject({ outcome: "deadline" })
  })

  it("429 waits as long as Retry-After asks; 429 without it and a 503 page are retried at once; then it succeeds", async () => {
    const hinted = await run("throttled with a hint", { create: [{ kind: "rate_limited", retryAfter: "1" }] })
    expect(hinted.task.status).toBe("succeeded")
    expect(hinted.creates).toHaveLength(2)
    expect(hinted.creates[1]!.at - hinted.creates[0]!.at).toBeGreaterThanOrEqual(950)

    const plain = await run("throttled plainly", { create: [{ kind: "rate_limited" }, { kind: "html", status: 503 }] })
    expect(plain.task.status).toBe("succeeded")
    expect(plain.creates).toHaveLength(3)
    expect(plain.creates[2]!.at - plain.creates[0]!.at).toBeLessThan(950)
    expect((await ledgerOf(ark.gw, plain.task.id)).map((l) => l.kind)).toEqual(["charge"])
  })

  it("throttled on every try: failed, retryable, refunded, and nothing was created upstream", async () => {
    const busy: Array<Fault> = [{ kind: "rate_limited" }, { kind: "rate_limited" }, { kind: "html", status: 502 }]
    const { creates, task } = await run("always throttled", { create: busy })
    expect(creates).toHaveLength(3)
    expect(upstreamTasksOf("always throttled")).toHaveLength(0)
    await expectFailed(task, true)
  })

  it("a refusal of the request itself is final: safety (not retryable) and bad parameters, sent once", async () => {
    for (const code of ["InputTextSensitiveContentDetected", "InvalidParameter"]) {
      const { creates, task } = await run(`refused with ${code}`, {
        create: [{ kind: "error", status: 400, type: "BadRequest", code }]
      })
      expect(creates).toHaveLength(1)
      await expectFailed(task, false)
    }
  })

  it("a create whose answer is lost, cut off or a 504 is never sent again: failed, retryable, refunded", async () => {
    for (const fault of [{ kind: "lost" }, { kind: "reset" }, { kind: "html", status: 504 }] as Array<Fault>) {
      const prompt = `create answered by ${fault.kind}`
      const { creates, task } = await run(prompt, { create: [fault] })
      expect(creates).toHaveLength(1)
      expect(upstreamTasksOf(prompt).length).toBeLessThanOrEqual(1)
      await expectFailed(task, true)
      expect((await engineRow(ark.gw, task.id)).upstream_id).toBe(null)
    }
  })

  it("polls that are throttled, answered by a proxy page or never answered are asked again; the task succeeds", async () => {
    const poll: Array<Fault> = [{ kind: "rate_limited", retryAfter: "1" }, { kind: "html", status: 502 }, {
      kind: "hang"
    }]
    const before = ark.fake.requests.length
    const { creates, task } = await run("polls that break", { poll })
    expect(task.status).toBe("succeeded")
    expect(creates).toHaveLength(1)
    const lists = ark.fake.requests.slice(before).filter((r) => r.method === "GET")
    expect(lists.length).toBeGreaterThanOrEqual(6)
    // The poll after the 429 waited for its Retry-After.
    expect(lists[1]!.at - lists[0]!.at).toBeGreaterThanOrEqual(950)
  })

  it("a key Ark refuses (another region's) moves the task to the model's next channel, charged once", async () => {
    const { creates, task } = await run("a key from elsewhere", { model: FAILOVER })
    expect(task.status).toBe("succeeded")
    expect(creates).toHaveLength(1)
    expect(creates[0]!.headers.authorization).toBe("Bearer ark-key-of-another-region")
    expect(await engineRow(ark.gw, task.id)).toMatchObject({ channel: "sandbox" })
    expect((await ledgerOf(ark.gw, task.id)).map((l) => l.kind)).toEqual(["charge"])
    const view = await operator(ark.gw).task(task.id)
    // The operator sees both attempts and Ark's own answer; the caller sees none of it.
    expect(view.channels_tried).toEqual(["byteplus-elsewhere", "sandbox"])
    expect(view.attempts).toMatchObject([
      {
        attempt: 1,
        channel: "byteplus-elsewhere",
        outcome: "failover",
        upstream: {
          status: 401,
          code: "AuthenticationError",
          message: expect.stringContaining("the API key is invalid")
        }
      },
      { attempt: 2, channel: "sandbox", outcome: "succeeded", upstream: null }
    ])
    expectNothingUpstream(ark.fake, task)
    expect(JSON.stringify(task)).not.toMatch(/AuthenticationError|API key is invalid|401/)
  })

  it("a result link that has lapsed (403 from storage) fails the task, retryable, with its refund", async () => {
    const { task } = await run("a link already expired", { scenario: { resultTtlMs: -1 } })
    await expectFailed(task, true)
    const view = await operator(ark.gw).task(task.id)
    expect(view.attempts.at(-1)).toMatchObject({ outcome: "fetch_failed" })
  })

  it("reads Ark's error answers as the engine needs them", () => {
    const of = (status: number, code = "", headers: Record<string, string> = {}) =>
      fromCreateStatus(status, headers, code ? { error: { code, type: "x", message: "y" } } : null)
    for (
      const [status, code] of [[401, "AuthenticationError"], [403, "AccountOverdueError"], [
        404,
        "InvalidEndpointOrModel.NotFound"
      ], [400, "InvalidEndpoint.ClosedEndpoint"]] as const
    ) {
      expect(of(status, code)).toMatchObject({ retryable: true, transient: false, notAccepted: true })
    }
    const unsafe = of(400, "SensitiveContentDetected.Violence")
    expect(unsafe).toMatchObject({ retryable: false, transient: false })
    expect(unsafe.notAccepted).toBeFalsy()
    expect(of(429, "RateLimitExceeded.EndpointTPMExceeded", { "retry-after": "3" })).toMatchObject({
      transient: true,
      notAccepted: true,
      retryAfterMs: 3000
    })
    expect(of(500)).toMatchObject({ transient: true, notAccepted: true })
    expect(of(504)).toMatchObject({ transient: true, ambiguous: true })
    expect(of(504).notAccepted).toBeFalsy()
  })
})
