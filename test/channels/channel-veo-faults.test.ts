import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { fromCreateStatus } from "../../channels/veo/Failures.ts"
import { stateOf } from "../../channels/veo/States.ts"
import type { Fault, Scenario } from "../fakes/veo.ts"
import { operator } from "../support/adminApi.ts"
import { backend } from "../support/database.ts"
import { eventually } from "../support/eventually.ts"
import { ledgerOf } from "../support/tasks.ts"
import { fieldOf } from "../support/upstream.ts"
import {
  engineRow,
  expectNothingUpstream,
  expectRefunded,
  GEMINI_MODEL,
  runVeo,
  startVeoGateway,
  type VeoSetup,
  VERTEX_MODEL
} from "../support/veo.ts"

/**
 * The `veo` adapter against the fake Veo when things go wrong
 * (docs/adapters/veo.md, States and polling, Failures): every end of an
 * operation, the safety filter, throttling with and without RetryInfo, proxy
 * pages, lost answers, refusals, keys and service accounts Google does not
 * accept, an expired file, a vanished operation, a Cloud Storage result. Each
 * case states the task's final status, error code, `retryable` and what the
 * ledger holds.
 */

const MAIN = "provx-famV-3.1-standard-720p"
const VMAIN = "provx-famV-3.1-standard-1080p"
const FAILOVER = "provx-famV-3.1-fast-720p"
const VFAILOVER = "provx-famV-3.1-fast-1080p"

let veo: VeoSetup

beforeAll(async () => {
  veo = await startVeoGateway({
    [MAIN]: [{ channel: "gemini", upstream_model: GEMINI_MODEL }],
    [VMAIN]: [{ channel: "vertex", upstream_model: VERTEX_MODEL }],
    [FAILOVER]: [{ channel: "gemini-elsewhere", upstream_model: GEMINI_MODEL }, "sandbox"],
    [VFAILOVER]: [{ channel: "vertex-elsewhere", upstream_model: VERTEX_MODEL }, "sandbox"]
  }, {
    "gemini-elsewhere": { like: "gemini", credentials: { api_key: { env: "GEMINI_WRONG_KEY" } } },
    "vertex-elsewhere": { like: "vertex", credentials: { service_account_json: { env: "VERTEX_SA_UNTRUSTED" } } }
  })
}, 60_000)
afterAll(async () => {
  await veo?.close()
})

const run = (prompt: string, { model = MAIN, scenario, create = [], poll = [] }: {
  model?: string
  scenario?: Scenario
  create?: Array<Fault>
  poll?: Array<Fault>
} = {}) => {
  if (scenario) veo.fake.scenarios.push(scenario)
  veo.fake.faults.create.push(...create)
  veo.fake.faults.poll.push(...poll)
  return runVeo(veo, { model, operation: "generation", input: { prompt }, output: { duration: 8 } })
}

const operationsOf = (prompt: string) =>
  [...veo.fake.operations.values()].filter((o) => o.body.instances[0].prompt === prompt)

const expectFailed = async (task: any, retryable: boolean) => {
  expect(task).toMatchObject({ status: "failed", error: { code: "video_task_failed", retryable } })
  expectNothingUpstream(veo.fake, task)
  await expectRefunded(veo.gw, task.id)
}

describe(`the veo channel: states and faults (${backend})`, () => {
  it("an operation ending in error, filtered by safety or without videos fails with its refund", async () => {
    const cases: Array<[string, Scenario, boolean, string?]> = [
      [MAIN, { end: "failed" }, true],
      [MAIN, { end: "failed", error: { code: 3, status: "INVALID_ARGUMENT", message: "bad image" } }, false],
      [MAIN, { end: "filtered" }, false, "safety"],
      [VMAIN, { end: "filtered" }, false, "safety"],
      [MAIN, { end: "no_video" }, true],
      [VMAIN, { end: "no_video" }, true]
    ]
    for (const [model, scenario, retryable, word] of cases) {
      const { creates, seen, task } = await run(`ending ${scenario.end} ${model} ${retryable}`, { model, scenario })
      // Not done yet was seen as in_progress on the way.
      expect(seen.some((t) => t.status === "in_progress")).toBe(true)
      expect(creates).toHaveLength(1)
      await expectFailed(task, retryable)
      if (word) expect(task.error?.message).toContain(word)
      const view = await operator(veo.gw).task(task.id)
      expect(fieldOf(view.attempts.at(-1)?.last_answer, "done")).toBe(true)
    }
  })

  it("429 with RetryInfo waits retryDelay; 429 without it and a 503 page are retried at once; then it succeeds", async () => {
    const hinted = await run("throttled with a hint", { create: [{ kind: "rate_limited", retryDelay: "3s" }] })
    expect(hinted.task.status).toBe("succeeded")
    expect(hinted.creates).toHaveLength(2)
    expect(hinted.creates[1]!.at - hinted.creates[0]!.at).toBeGreaterThanOrEqual(2950)

    const plain = await run("throttled plainly", { create: [{ kind: "rate_limited" }, { kind: "html", status: 503 }] })
    expect(plain.task.status).toBe("succeeded")
    expect(plain.creates).toHaveLength(3)
    // The engine's own short backoff, well under the 3 s a hint would have cost (a loaded machine adds a little).
    expect(plain.creates[2]!.at - plain.creates[0]!.at).toBeLessThan(2500)
    expect((await ledgerOf(veo.gw, plain.task.id)).map((l) => l.kind)).toEqual(["charge"])
  })

  it("throttled on every try (a daily quota among them): failed, retryable, refunded, nothing created", async () => {
    const busy: Array<Fault> = [
      { kind: "rate_limited", daily: true, retryDelay: "30s" },
      { kind: "rate_limited" },
      { kind: "html", status: 500 }
    ]
    const { creates, task } = await run("always throttled", { create: busy })
    expect(creates).toHaveLength(3)
    // The daily quota's 30 s hint was not waited for: it would not help.
    expect(creates[1]!.at - creates[0]!.at).toBeLessThan(5000)
    expect(operationsOf("always throttled")).toHaveLength(0)
    await expectFailed(task, true)
  })

  it("INVALID_ARGUMENT refuses the request itself: sent once, failed, not retryable", async () => {
    const { creates, task } = await run("refused as invalid", {
      create: [{ kind: "error", status: 400, word: "INVALID_ARGUMENT", message: "durationSeconds out of bound" }]
    })
    expect(creates).toHaveLength(1)
    await expectFailed(task, false)
  })

  it("a create never answered, answered by nothing, cut off or a 504 is never sent again: failed, retryable", async () => {
    const faults: Array<Fault> = [{ kind: "lost" }, { kind: "reset" }, { kind: "html", status: 504 }, { kind: "hang" }]
    for (const fault of faults) {
      const prompt = `create answered by ${fault.kind}`
      const { creates, task } = await run(prompt, { create: [fault] })
      expect(creates).toHaveLength(1)
      expect(operationsOf(prompt).length).toBeLessThanOrEqual(1)
      await expectFailed(task, true)
      expect((await engineRow(veo.gw, task.id)).upstream_id).toBe(null)
    }
  })

  it("polls throttled with RetryInfo, answered by a proxy page or never answered are asked again; it succeeds", async () => {
    const poll: Array<Fault> = [{ kind: "rate_limited", retryDelay: "1s" }, { kind: "html", status: 502 }, {
      kind: "hang"
    }]
    const before = veo.fake.requests.length
    const { creates, task } = await run("polls that break", { poll })
    expect(task.status).toBe("succeeded")
    expect(creates).toHaveLength(1)
    const polls = veo.fake.requests.slice(before).filter((r) => r.path.includes("/operations/"))
    expect(polls.length).toBeGreaterThanOrEqual(5)
    expect(polls[1]!.at - polls[0]!.at).toBeGreaterThanOrEqual(950)
  })

  it("a key Google refuses (API_KEY_INVALID) moves the task to the model's next channel, charged once", async () => {
    const { creates, task } = await run("a key from elsewhere", { model: FAILOVER })
    expect(task.status).toBe("succeeded")
    expect(creates).toHaveLength(1)
    expect(await engineRow(veo.gw, task.id)).toMatchObject({ channel: "sandbox" })
    expect((await ledgerOf(veo.gw, task.id)).map((l) => l.kind)).toEqual(["charge"])
    const view = await operator(veo.gw).task(task.id)
    expect(view.attempts[0]).toMatchObject({ channel: "gemini-elsewhere", outcome: "failover" })
  })

  it("a service account the token endpoint refuses: nothing is created, the task moves to the next channel", async () => {
    const before = veo.fake.requests.length
    const { creates, task } = await run("an account from elsewhere", { model: VFAILOVER })
    expect(task.status).toBe("succeeded")
    expect(creates).toHaveLength(0)
    const refused = veo.fake.requests.slice(before).filter((r) => r.path === "/token")
    expect(refused.length).toBeGreaterThanOrEqual(1)
    expect(await engineRow(veo.gw, task.id)).toMatchObject({ channel: "sandbox" })
    expect((await ledgerOf(veo.gw, task.id)).map((l) => l.kind)).toEqual(["charge"])
  })

  it("an expired Gemini file (404) fails the task, retryable, with its refund", async () => {
    const { task } = await run("a file already gone", { scenario: { resultTtlMs: -1 } })
    await expectFailed(task, true)
    const view = await operator(veo.gw).task(task.id)
    expect(view.attempts.at(-1)).toMatchObject({ outcome: "fetch_failed" })
  })

  it("an operation that vanishes (404 NOT_FOUND) fails, retryable, with its refund", async () => {
    veo.fake.scenarios.push({ pending: Infinity })
    const running = runVeo(veo, {
      model: MAIN,
      operation: "generation",
      input: { prompt: "to vanish" },
      output: { duration: 8 }
    })
    await eventually(() => operationsOf("to vanish").some((o) => o.polls > 0), "polled", {
      deadlineMs: 10_000,
      intervalMs: 50
    })
    veo.fake.operations.delete(operationsOf("to vanish")[0]!.name)
    await expectFailed((await running).task, true)
  })

  it("a Vertex result in Cloud Storage (gcsUri), which this channel cannot read, fails clearly with its refund", async () => {
    const { task } = await run("stored in a bucket", { model: VMAIN, scenario: { end: "gcs" } })
    await expectFailed(task, true)
    expect(task.error?.message).toContain("cannot read")
  })

  it("reads Google's answers as the engine needs them", () => {
    const of = (status: number, body: unknown = null, headers: Record<string, string> = {}) =>
      fromCreateStatus(status, headers, body)
    const google = (code: number, status: string, details: Array<unknown> = []) => ({
      error: { code, status, message: "x", details }
    })
    for (
      const body of [
        google(401, "UNAUTHENTICATED"),
        google(403, "PERMISSION_DENIED"),
        google(400, "FAILED_PRECONDITION"),
        google(404, "NOT_FOUND"),
        google(400, "INVALID_ARGUMENT", [{
          "@type": "type.googleapis.com/google.rpc.ErrorInfo",
          reason: "API_KEY_INVALID"
        }])
      ]
    ) {
      expect(of(body.error.code, body)).toMatchObject({ retryable: true, transient: false, notAccepted: true })
    }
    const invalid = of(400, google(400, "INVALID_ARGUMENT"))
    expect(invalid).toMatchObject({ retryable: false, transient: false })
    expect(invalid.notAccepted).toBeFalsy()
    const retry = { "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay: "31s" }
    expect(of(429, google(429, "RESOURCE_EXHAUSTED", [retry]))).toMatchObject({
      transient: true,
      notAccepted: true,
      retryAfterMs: 31_000
    })
    const daily = {
      "@type": "type.googleapis.com/google.rpc.QuotaFailure",
      violations: [{ quotaId: "RequestsPerDay" }]
    }
    expect(of(429, google(429, "RESOURCE_EXHAUSTED", [daily, retry])).retryAfterMs).toBeUndefined()
    expect(of(503)).toMatchObject({ transient: true, notAccepted: true })
    expect(of(504)).toMatchObject({ transient: true, ambiguous: true })
    // An operation whose `done` is not a boolean, or an answer that is no operation: polled again until the deadline.
    expect(stateOf("models/m/operations/1", { name: "models/m/operations/1", done: "perhaps" })._tag).toBe("Pending")
    expect(stateOf("models/m/operations/1", "<html>")._tag).toBe("Unknown")
    expect(stateOf("models/m/operations/1", { name: "models/m/operations/2", done: true })._tag).toBe("Unknown")
  })
})
