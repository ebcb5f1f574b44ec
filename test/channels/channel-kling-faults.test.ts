import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { CONCURRENCY_BACKOFF_MS, fromCreateStatus } from "../../channels/kling/Failures.ts"
import { currentStateOf, legacyStateOf } from "../../channels/kling/States.ts"
import type { Fault, Scenario } from "../fakes/kling.ts"
import { operator } from "../support/adminApi.ts"
import { backend } from "../support/database.ts"
import {
  engineRow,
  expectNothingUpstream,
  expectRefunded,
  type KlingSetup,
  runKling,
  startKlingGateway
} from "../support/kling.ts"
import { ledgerOf } from "../support/tasks.ts"
import { fieldOf } from "../support/upstream.ts"

/**
 * The `kling` adapter against the fake Kling when things go wrong
 * (docs/adapters/kling.md, States and polling, Failures), on both API
 * generations: every terminal state, throttling (1302) and concurrency (1303),
 * a spent resource pack (1102), content-safety refusals, proxy pages, lost
 * answers recovered through `external_task_id`, refused credentials, a lapsed
 * result link. Each case states the task's final status, error code,
 * `retryable` and what the ledger holds.
 */

const CURRENT = "provx-famK-3.0-720p"
const LEGACY = "provx-famK-3.0-1080p"
const PACK_FAILOVER = "provx-famK-3.0-omni-720p"
const AUTH_FAILOVER = "provx-famK-3.0-omni-1080p"

let k: KlingSetup

beforeAll(async () => {
  k = await startKlingGateway({
    [CURRENT]: [{ channel: "klingai", upstream_model: "kling-3.0" }],
    [LEGACY]: [{ channel: "klingai-jwt", upstream_model: "kling-v3" }],
    [PACK_FAILOVER]: [{ channel: "klingai-second", upstream_model: "kling-3.0-omni" }, "sandbox"],
    [AUTH_FAILOVER]: [{ channel: "klingai-revoked", upstream_model: "kling-v3-omni" }, "sandbox"]
  }, {
    "klingai-second": { api: "current", credentials: { api_key: { env: "KLING_API_KEY" } } },
    "klingai-revoked": {
      api: "legacy",
      credentials: { access_key: { env: "KLING_AK" }, secret_key: { env: "KLING_WRONG_SK" } }
    }
  })
}, 60_000)
afterAll(async () => {
  await k?.close()
})

const run = (prompt: string, { model = CURRENT, scenario, create = [], poll = [] }: {
  model?: string
  scenario?: Scenario
  create?: Array<Fault>
  poll?: Array<Fault>
} = {}) => {
  if (scenario) k.fake.scenarios.push(scenario)
  k.fake.faults.create.push(...create)
  k.fake.faults.poll.push(...poll)
  return runKling(k, { model, operation: "generation", input: { prompt }, output: { duration: 3 } })
}

const upstreamTasksOf = (prompt: string) => [...k.fake.tasks.values()].filter((t) => t.body.prompt === prompt)

const expectFailed = async (task: any, retryable: boolean) => {
  expect(task).toMatchObject({ status: "failed", error: { code: "video_task_failed", retryable } })
  expectNothingUpstream(k.fake, task)
  await expectRefunded(k.gw, task.id)
}

describe(`the kling channel: states and faults (${backend})`, () => {
  it("failed (reason in task_status_msg / message) and succeeded-without-videos end the task with its refund", {
    timeout: 90_000
  }, async () => {
    const cases: Array<[string, Scenario, boolean]> = [
      ["safety", { end: "failed", message: "Failure to pass the risk control system" }, false],
      ["bad input", { end: "failed", message: "Image pixel is invalid" }, false],
      ["internal", { end: "failed", message: "Internal error, please retry" }, true],
      ["no video", { end: "no_video" }, true]
    ]
    for (const model of [CURRENT, LEGACY]) {
      for (const [what, scenario, retryable] of cases) {
        const { creates, seen, task } = await run(`ending ${what} on ${model}`, { model, scenario })
        expect(seen.some((t) => t.status === "in_progress")).toBe(true)
        expect(creates).toHaveLength(1)
        await expectFailed(task, retryable)
        // Operators see Kling's own words.
        const answer = (await operator(k.gw).task(task.id)).attempts.at(-1)?.last_answer
        if (model === LEGACY) {
          expect(fieldOf(answer, "task_status")).toBe(scenario.end === "no_video" ? "succeed" : "failed")
          if (scenario.message) expect(fieldOf(answer, "task_status_msg")).toBe(scenario.message)
        } else {
          expect(fieldOf(answer, "status")).toBe(scenario.end === "no_video" ? "succeeded" : "failed")
        }
      }
    }
  })

  it("maps every status of both generations; anything else is Unknown (polled until the deadline)", () => {
    const legacy = (task_status: unknown, more = {}) => legacyStateOf({ task_id: "1", task_status, ...more })._tag
    const current = (status: unknown, more = {}) => currentStateOf({ id: "1", status, ...more })._tag
    for (const  of of[legacy, current]) {
      expect(of("submitted")).toBe("Pending")
      expect(of("processing")).toBe("Pending")
      expect(of("failed")).toBe("Failed")
      expect(of("paused")).toBe("Unknown")
      expect(of(undefined)).toBe("Unknown")
    }
    expect(legacy("succeed", { task_result: { videos: [{ url: "https://x/v.mp4" }] } })).toBe("Succeeded")
    expect(current("succeeded", { outputs: [{ type: "video", url: "https://x/v.mp4" }] })).toBe("Succeeded")
    const empty = legacyStateOf({ task_status: "succeed", task_result: { videos: [] } })
    expect(empty._tag === "Succeeded" && empty.results).toEqual([])
  })

  it("429 1302 waits as long as Retry-After asks; without it, and a 503 page, retried at once; then it succeeds", async () => {
    const hinted = await run("throttled with a hint", { create: [{ kind: "rate_limited", retryAfter: "1" }] })
    expect(hinted.task.status).toBe("succeeded")
    expect(hinted.creates).toHaveLength(2)
    expect(hinted.creates[1]!.at - hinted.creates[0]!.at).toBeGreaterThanOrEqual(950)

    const plain = await run("throttled plainly", { create: [{ kind: "rate_limited" }, { kind: "html", status: 503 }] })
    expect(plain.task.status).toBe("succeeded")
    expect(plain.creates).toHaveLength(3)
    expect(plain.creates[2]!.at - plain.creates[0]!.at).toBeLessThan(950)
    expect((await ledgerOf(k.gw, plain.task.id)).map((l) => l.kind)).toEqual(["charge"])
  })

  it("1303 (too many tasks in flight) backs off at least two seconds, then the task is created once", async () => {
    k.fake.limits.slots = 0
    // Open again once a create has been refused (a fixed timer could fire before the first create, under load).
    const before = k.fake.requests.length
    const reopen = setInterval(() => {
      if (k.fake.requests.slice(before).some((r) => r.method === "POST")) {
        k.fake.limits.slots = Infinity
        clearInterval(reopen)
      }
    }, 10)
    const { creates, task } = await run("over the concurrency", { model: LEGACY }).finally(() => clearInterval(reopen))
    expect(task.status).toBe("succeeded")
    expect(creates.length).toBeGreaterThanOrEqual(2)
    expect(creates[1]!.at - creates[0]!.at).toBeGreaterThanOrEqual(CONCURRENCY_BACKOFF_MS - 50)
    expect(upstreamTasksOf("over the concurrency")).toHaveLength(1)
  })

  it("throttled on every try: failed, retryable, refunded, and nothing was created upstream", async () => {
    const busy: Array<Fault> = [{ kind: "rate_limited" }, { kind: "rate_limited" }, { kind: "html", status: 502 }]
    const { creates, task } = await run("always throttled", { create: busy })
    expect(creates).toHaveLength(3)
    expect(upstreamTasksOf("always throttled")).toHaveLength(0)
    await expectFailed(task, true)
  })

  it("1102 (resource pack spent) is not retried: alone, failed retryable with refund; with a next channel, moved there", async () => {
    const pack: Fault = { kind: "error", status: 429, code: 1102 }
    const alone = await run("a spent pack", { create: [pack] })
    expect(alone.creates).toHaveLength(1)
    await expectFailed(alone.task, true)

    const moved = await run("a spent pack, then elsewhere", { model: PACK_FAILOVER, create: [pack] })
    expect(moved.task.status).toBe("succeeded")
    expect(moved.creates).toHaveLength(1)
    expect(await engineRow(k.gw, moved.task.id)).toMatchObject({ channel: "sandbox" })
    expect((await ledgerOf(k.gw, moved.task.id)).map((l) => l.kind)).toEqual(["charge"])
    const view = await operator(k.gw).task(moved.task.id)
    expect(view.channels_tried).toEqual(["klingai-second", "sandbox"])
    expect(view.attempts).toMatchObject([
      { attempt: 1, channel: "klingai-second", outcome: "failover", upstream: { status: 429, code: "1102" } },
      { attempt: 2, channel: "sandbox", outcome: "succeeded", upstream: null }
    ])
    expectNothingUpstream(k.fake, moved.task)
  })

  it("a refusal of the request itself is final: content safety 1301 and a bad parameter 1201, sent once", async () => {
    for (const code of [1301, 1201]) {
      const { creates, task } = await run(`refused with ${code}`, { create: [{ kind: "error", status: 400, code }] })
      expect(creates).toHaveLength(1)
      await expectFailed(task, false)
    }
  })

  it("a JWT signed with a revoked secret (1002) moves the task to the next channel, charged once", async () => {
    const { creates, task } = await run("a revoked secret", { model: AUTH_FAILOVER })
    expect(task.status).toBe("succeeded")
    expect(creates).toHaveLength(1)
    expect(creates[0]!.path).toBe("/v1/videos/omni-video")
    expect(await engineRow(k.gw, task.id)).toMatchObject({ channel: "sandbox" })
    expect((await ledgerOf(k.gw, task.id)).map((l) => l.kind)).toEqual(["charge"])
  })

  // Four tasks end to end (two protocols, two faults), each through a lost or timed-out create: 60 s, not one task's 30.
  it(
    "a create whose answer is lost or cut off is found by external_task_id: one upstream task, adopted, succeeded",
    async () => {
      for (const model of [CURRENT, LEGACY]) {
        for (const fault of [{ kind: "lost" }, { kind: "reset" }] as Array<Fault>) {
          const prompt = `create answered by ${fault.kind} on ${model}`
          const before = k.fake.requests.length
          const { creates, task } = await run(prompt, { model, create: [fault] })
          expect(task.status).toBe("succeeded")
          expect(creates).toHaveLength(1)
          const upstream = upstreamTasksOf(prompt)
          expect(upstream).toHaveLength(1)
          expect(upstream[0]!.externalId).toBe(task.id)
          expect((await engineRow(k.gw, task.id)).upstream_id).toContain(upstream[0]!.id)
          expect((await ledgerOf(k.gw, task.id)).map((l) => l.kind)).toEqual(["charge"])
          // Looked up by our id, not created again.
          const lookups = k.fake.requests.slice(before).filter((r) =>
            model === CURRENT ? r.query["external_task_ids"] === task.id : r.path.endsWith(`/${task.id}`)
          )
          expect(lookups.length).toBeGreaterThanOrEqual(1)
        }
      }
    },
    60_000
  )

  // Four tasks end to end, as above.
  it(
    "a create that hangs or meets a 504 page created nothing: find says so, it is sent again, one task upstream",
    async () => {
      for (const fault of [{ kind: "hang" }, { kind: "html", status: 504 }] as Array<Fault>) {
        for (const model of [CURRENT, LEGACY]) {
          const prompt = `create answered by ${fault.kind} on ${model}`
          const { creates, task } = await run(prompt, { model, create: [fault] })
          expect(task.status).toBe("succeeded")
          expect(creates).toHaveLength(2)
          expect(upstreamTasksOf(prompt)).toHaveLength(1)
          expect((await ledgerOf(k.gw, task.id)).map((l) => l.kind)).toEqual(["charge"])
        }
      }
    },
    60_000
  )

  // Two tasks end to end, each through a throttled, a proxy-answered and a hung poll and the backoff after them.
  it(
    "polls that are throttled, answered by a proxy page or never answered are asked again; the task succeeds",
    async () => {
      for (const model of [CURRENT, LEGACY]) {
        const poll: Array<Fault> = [
          { kind: "rate_limited", retryAfter: "1" },
          { kind: "html", status: 502 },
          { kind: "hang" }
        ]
        const before = k.fake.requests.length
        const { creates, task } = await run(`polls that break on ${model}`, { model, poll })
        expect(task.status).toBe("succeeded")
        expect(creates).toHaveLength(1)
        const polls = k.fake.requests.slice(before).filter((r) => r.method === "GET")
        expect(polls.length).toBeGreaterThanOrEqual(5)
        expect(polls[1]!.at - polls[0]!.at).toBeGreaterThanOrEqual(950)
      }
    },
    60_000
  )

  it("a result link that has lapsed (403 from the CDN) fails the task, retryable, with its refund", async () => {
    const { task } = await run("a link already expired", { scenario: { resultTtlMs: -1 } })
    await expectFailed(task, true)
    const view = await operator(k.gw).task(task.id)
    expect(view.attempts.at(-1)).toMatchObject({ outcome: "fetch_failed" })
  })

  it("reads Kling's error envelopes as the engine needs them", () => {
    const of = (status: number, code?: number, headers: Record<string, string> = {}) =>
      fromCreateStatus(status, headers, code === undefined ? null : { code, message: "m", request_id: "r" })
    // Credentials, account, balance, pack, permission, unknown model, IP policy: this channel, not retried here.
    for (
      const [status, code] of [[401, 1002], [401, 1004], [429, 1101], [429, 1102], [403, 1103], [404, 1203], [
        429,
        1304
      ]]
    ) {
      expect(of(status!, code)).toMatchObject({ retryable: true, transient: false, notAccepted: true })
    }
    for (const code of [1300, 1301, 1200, 1201]) {
      const refused = of(400, code)
      expect(refused).toMatchObject({ retryable: false, transient: false })
      expect(refused.notAccepted).toBeFalsy()
    }
    expect(of(429, 1302, { "retry-after": "3" })).toMatchObject({
      transient: true,
      notAccepted: true,
      retryAfterMs: 3000
    })
    expect(of(429, 1303)).toMatchObject({ transient: true, notAccepted: true, retryAfterMs: CONCURRENCY_BACKOFF_MS })
    expect(of(500, 5000)).toMatchObject({ transient: true, notAccepted: true })
    expect(of(503, 5001)).toMatchObject({ transient: true, notAccepted: true })
    expect(of(504, 5002)).toMatchObject({ transient: true, ambiguous: true })
    expect(of(504).notAccepted).toBeFalsy()
    expect(of(502)).toMatchObject({ transient: true, notAccepted: true })
  })
})
