import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { Fault, Scenario } from "../fakes/replicate.ts"
import { operator } from "../support/adminApi.ts"
import { backend } from "../support/database.ts"
import {
  engineRow,
  expectNothingUpstream,
  expectRefunded,
  type ReplicateSetup,
  runReplicate,
  startReplicateGateway
} from "../support/replicate.ts"
import { ledgerOf } from "../support/tasks.ts"
import { fieldOf } from "../support/upstream.ts"

/**
 * The `replicate` adapter against the fake Replicate when things go wrong
 * (docs/adapters/replicate.md, States, Failures): every terminal status
 * (`aborted` included, which the official client never ends on), throttling
 * with and without `Retry-After`, proxy pages, lost and cut-off answers, reads
 * that break, and an output Replicate has already deleted. Each case states
 * the task's final status, `retryable` and what the ledger holds.
 */

const MODEL = "provx-famV-3.1-fast-720p"
/** Replicate first, the sandbox second. */
const WITH_NEXT = "provx-famV-3.1-fast-1080p"
let r: ReplicateSetup

beforeAll(async () => {
  const onReplicate = { channel: "marketplace", upstream_model: "google/veo-3.1-fast" }
  r = await startReplicateGateway(
    { [MODEL]: [onReplicate], [WITH_NEXT]: [onReplicate, "sandbox"] },
    // Each test reaches Replicate, never skipped after an earlier test's refusals.
    { breaker_cooldown_s: 0 }
  )
}, 60_000)
afterAll(async () => {
  await r?.close()
})

const run = (prompt: string, { scenario, create = [], read = [], model = MODEL }: {
  scenario?: Scenario
  create?: Array<Fault>
  read?: Array<Fault>
  model?: string
} = {}) => {
  if (scenario) r.fake.scenarios.push(scenario)
  r.fake.faults.create.push(...create)
  r.fake.faults.read.push(...read)
  return runReplicate(r, { model, operation: "generation", input: { prompt }, output: { duration: 4 } })
}

const predictionsOf = (prompt: string) => [...r.fake.predictions.values()].filter((p) => p.input.prompt === prompt)

const expectFailed = async (task: any, retryable: boolean) => {
  expect(task).toMatchObject({ status: "failed", error: { code: "video_task_failed", retryable } })
  expectNothingUpstream(r.fake, task)
  await expectRefunded(r.gw, task.id)
}

describe(`the replicate channel: states and faults (${backend})`, () => {
  it("failed, canceled, aborted and done-without-output end the task with its refund; only a safety refusal is final", async () => {
    const cases: Array<[Scenario, string, boolean]> = [
      [{ end: "failed", error: "NSFW content detected in the output. Try a different prompt." }, "failed", false],
      [{ end: "failed", error: "CUDA out of memory" }, "failed", true],
      [{ end: "canceled" }, "canceled", true],
      // The Cancel-After deadline passed before the prediction started: never billed, never final for the client.
      [{ end: "aborted", starting: 2 }, "aborted", true],
      [{ end: "no_output" }, "succeeded", true]
    ]
    for (const [scenario, status, retryable] of cases) {
      const { creates, task } = await run(`ending ${status} ${retryable}`, { scenario })
      expect(creates).toHaveLength(1)
      await expectFailed(task, retryable)
      const view = await operator(r.gw).task(task.id)
      expect(fieldOf(view.attempts.at(-1)?.last_answer, "status")).toBe(status)
    }
  })

  it("429 waits as Retry-After asks, or as the body's \"resets in ~Ns\" says without it; a 503 page is retried", async () => {
    const hinted = await run("throttled with a header", { create: [{ kind: "rate_limited", retryAfter: "1" }] })
    expect(hinted.task.status).toBe("succeeded")
    expect(hinted.creates).toHaveLength(2)
    expect(hinted.creates[1]!.at - hinted.creates[0]!.at).toBeGreaterThanOrEqual(950)

    // Replicate's own throttle answer carries no header: its detail gives the wait.
    const worded = await run("throttled in words", { create: [{ kind: "rate_limited", resetsIn: 1 }] })
    expect(worded.task.status).toBe("succeeded")
    expect(worded.creates).toHaveLength(2)
    expect(worded.creates[1]!.at - worded.creates[0]!.at).toBeGreaterThanOrEqual(950)

    const page = await run("a proxy page", { create: [{ kind: "html", status: 503 }] })
    expect(page.task.status).toBe("succeeded")
    expect(page.creates).toHaveLength(2)
    expect((await ledgerOf(r.gw, page.task.id)).map((l) => l.kind)).toEqual(["charge"])
  })

  it("throttled on every try: failed, retryable, refunded, nothing created upstream", async () => {
    const busy: Array<Fault> = [
      { kind: "rate_limited", resetsIn: 0 },
      { kind: "html", status: 502 },
      { kind: "rate_limited", resetsIn: 0 }
    ]
    const { creates, task } = await run("always throttled", { create: busy })
    expect(creates).toHaveLength(3)
    expect(predictionsOf("always throttled")).toHaveLength(0)
    await expectFailed(task, true)
  })

  it("a refused input (422) and a refused token or credit (401, 402) are sent once", async () => {
    const invalid = await run("refused input", { create: [{ kind: "error", status: 422, detail: "input.x: bad" }] })
    expect(invalid.creates).toHaveLength(1)
    await expectFailed(invalid.task, false)
    for (const status of [401, 402]) {
      const { creates, task } = await run(`refused with ${status}`, {
        create: [{ kind: "error", status, detail: "no" }]
      })
      // No other channel to move to: the task fails, retryable, with its refund.
      expect(creates).toHaveLength(1)
      await expectFailed(task, true)
    }
  })

  it("a create that hangs, is cut off after it was read, or meets a 504 is never sent again", async () => {
    for (const fault of [{ kind: "hang" }, { kind: "reset" }, { kind: "html", status: 504 }] as Array<Fault>) {
      const prompt = `create answered by ${fault.kind}`
      const { creates, task } = await run(prompt, { create: [fault] })
      expect(creates).toHaveLength(1)
      expect(predictionsOf(prompt).length).toBeLessThanOrEqual(1)
      await expectFailed(task, true)
      expect((await engineRow(r.gw, task.id)).upstream_id).toBe(null)
    }
    // The reset one was created upstream; its Cancel-After stops it when our deadline passes.
    expect(predictionsOf("create answered by reset")[0]!.cancelAfter).toBe("6h")
  })

  it("reads that are throttled, answered by a proxy page or never answered are asked again; the task succeeds", async () => {
    const read: Array<Fault> = [{ kind: "rate_limited", retryAfter: "1" }, { kind: "html", status: 502 }, {
      kind: "hang"
    }]
    const before = r.fake.requests.length
    const { creates, task } = await run("reads that break", { read })
    expect(task.status).toBe("succeeded")
    expect(creates).toHaveLength(1)
    const reads = r.fake.requests.slice(before).filter((q) => q.method === "GET")
    expect(reads.length).toBeGreaterThanOrEqual(5)
    expect(reads[1]!.at - reads[0]!.at).toBeGreaterThanOrEqual(950)
  })

  it("failover: a token or credit Replicate refuses moves the task to the next channel, charged once", async () => {
    const { creates, task } = await run("no credit left", {
      model: WITH_NEXT,
      create: [{ kind: "error", status: 402, detail: "You have insufficient credit to run this model." }]
    })
    expect(task.status).toBe("succeeded")
    expect(creates).toHaveLength(1)
    expect(predictionsOf("no credit left")).toHaveLength(0)
    expect(await engineRow(r.gw, task.id)).toMatchObject({ channel: "sandbox" })
    expect((await ledgerOf(r.gw, task.id)).map((l) => l.kind)).toEqual(["charge"])
    const view = await operator(r.gw).task(task.id)
    expect(view.attempts[0]).toMatchObject({ channel: "marketplace", outcome: "failover" })
  })

  it("no failover when Replicate may hold the prediction (cut off after it was read): failed, refunded, never elsewhere", async () => {
    const { creates, task } = await run("cut off, with a next channel", {
      model: WITH_NEXT,
      create: [{ kind: "reset" }]
    })
    expect(creates).toHaveLength(1)
    // Replicate made the prediction; no idempotency key finds it, so it is not made again anywhere.
    expect(predictionsOf("cut off, with a next channel")).toHaveLength(1)
    await expectFailed(task, true)
    expect(await engineRow(r.gw, task.id)).toMatchObject({ channel: "marketplace", upstream_id: null })
  })

  it("an output Replicate already deleted fails the task, retryable, with its refund", async () => {
    r.fake.outputTtlMs = -1
    try {
      const { task } = await run("an output already gone")
      await expectFailed(task, true)
      const view = await operator(r.gw).task(task.id)
      expect(view.attempts.at(-1)).toMatchObject({ outcome: "fetch_failed" })
    } finally {
      r.fake.outputTtlMs = 60 * 60 * 1000
    }
  })
})
