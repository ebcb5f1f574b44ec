import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createAccount } from "../support/adminApi.ts"
import { api, rejection } from "../support/api.ts"
import { backend } from "../support/database.ts"
import {
  expectChargedOnce,
  expectNothingUpstream,
  expectRefunded,
  type FalSetup,
  runFal,
  startFalGateway
} from "../support/fal.ts"
import { makeImage, startMediaServer } from "../support/uploads.ts"

/**
 * The `fal` adapter's failures against the fake fal queue
 * (docs/adapters/fal.md, Failures): refusals at submit retried or final,
 * an ambiguous submit never sent again, a bad input fal reports only at the
 * result fetch failing the task (not retried), runner errors, lapsed
 * links, broken polls, and what the adapter refuses before sending (at
 * creation when the route is narrowed).
 */

const FAMK = "provx-famK-3.0-720p"
const FAMS = "provx-famS-720p"
const FAMS_NARROW = "provx-famS-1080p"

let setup: FalSetup
let media: Awaited<ReturnType<typeof startMediaServer>>

beforeAll(async () => {
  media = await startMediaServer({ "/first.png": { body: await makeImage("png", "160x90"), type: "image/png" } })
  setup = await startFalGateway({
    [FAMK]: [{ channel: "fal-market", upstream_model: "fal-ai/kling-video/v3/pro/text-to-video" }],
    [FAMS]: [{ channel: "fal-market", upstream_model: "fal-ai/bytedance/seedance/v1.5/pro/text-to-video" }],
    // Narrower than Seedance 1.5 Pro takes (4 to 12 s, the adapter's default): refused at creation, not later.
    [FAMS_NARROW]: [{
      channel: "fal-market",
      upstream_model: "fal-ai/bytedance/seedance/v1.5/pro/text-to-video",
      narrower: { durations: { min: 4, max: 10 } }
    }]
  })
}, 90_000)
afterAll(async () => {
  await setup?.close()
  await media?.close()
})

const famK = (over: Record<string, unknown> = {}) => ({
  model: FAMK,
  operation: "generation",
  input: { prompt: "a fox in the snow" },
  output: { duration: 5 },
  ...over
})

const expectFailed = async (task: any, retryable: boolean) => {
  expect(task).toMatchObject({ status: "failed", error: { code: "video_task_failed", retryable } })
  expectNothingUpstream(setup.fake, task)
  await expectRefunded(setup.gw, task.id)
}

describe(`the fal channel's failures (${backend})`, () => {
  it("a 429 with Retry-After and an HTML 502 at submit are retried; one request queued, charged once", async () => {
    setup.fake.faults.submit.push({ kind: "rate_limited", retryAfter: "1" }, { kind: "html", status: 502 })
    const queuedBefore = setup.fake.queued.size
    const run = await runFal(setup, famK())
    expect(run.task.status).toBe("succeeded")
    expect(run.creates).toHaveLength(3)
    // Retry-After: 1 is honoured although the engine's backoff starts at 50 ms.
    expect(run.creates[1]!.at - run.creates[0]!.at).toBeGreaterThanOrEqual(950)
    expect(setup.fake.queued.size - queuedBefore).toBe(1)
    await expectChargedOnce(setup.gw, run.task.id)
  })

  it("a submit left unanswered, or cut off after fal read it, is never sent again: failed, retryable, refunded", async () => {
    for (const kind of ["hang", "reset"] as const) {
      setup.fake.faults.submit.push({ kind })
      const run = await runFal(setup, famK())
      expect(run.creates).toHaveLength(1)
      await expectFailed(run.task, true)
    }
  })

  it("a reference fal cannot download shows only at the result fetch (422): failed, not retryable, never resubmitted", async () => {
    setup.fake.scenarios.push({ end: "bad_reference" })
    const run = await runFal(setup, {
      model: FAMS,
      operation: "generation",
      input: { prompt: "a boat", image: { url: `${media.url}/first.png` } },
      output: { duration: 5 }
    })
    expect(run.creates).toHaveLength(1)
    await expectFailed(run.task, false)
    // The status said COMPLETED; only the result said why.
    const queries = run.requests.filter((r) => r.method === "GET")
    expect(queries.at(-1)!.path).toMatch(/\/requests\/[0-9a-f-]{36}$/)
  })

  it("a content-policy refusal (422 at the result fetch) fails the task, not retryable", async () => {
    setup.fake.scenarios.push({ end: "content_policy" })
    const run = await runFal(setup, famK())
    expect(run.task.error?.message).toMatch(/content safety/)
    await expectFailed(run.task, false)
  })

  it("a runner error, a result without a video, and a lapsed link fail the task, retryable, refunded", async () => {
    for (const scenario of [{ end: "runner_error" as const }, { end: "no_output" as const }, { resultTtlMs: 1 }]) {
      setup.fake.scenarios.push(scenario)
      const run = await runFal(setup, famK())
      expect(run.creates).toHaveLength(1)
      await expectFailed(run.task, true)
    }
  })

  it("broken status queries (429, an HTML 503, a reset) change nothing: the task goes on and succeeds", async () => {
    setup.fake.faults.poll.push({ kind: "rate_limited" }, { kind: "html", status: 503 }, { kind: "reset" })
    const run = await runFal(setup, famK())
    expect(run.task.status).toBe("succeeded")
    expect(run.creates).toHaveLength(1)
  })

  it("a broken result fetch (a proxy's page with 200, a 502, a reset) is asked again, not taken for a result", async () => {
    setup.fake.faults.result.push({ kind: "html", status: 200 }, { kind: "html", status: 502 }, { kind: "reset" })
    const run = await runFal(setup, famK())
    expect(run.task.status).toBe("succeeded")
    expect(setup.fake.faults.result).toHaveLength(0)
    expect(run.requests.filter((r) => r.method === "GET" && !r.path.endsWith("/status"))).toHaveLength(4)
  })

  it("what the endpoint has no field for is refused before anything is sent", async () => {
    const before = setup.fake.requests.length
    // A duration the endpoint does not take: the adapter's table is the route's default, so a 400 at creation.
    const acct = await createAccount(setup.gw, { name: "too long", wallet_credits: 100 })
    const tooLong = await rejection(
      api(setup.gw, acct).createVideo({
        model: FAMS,
        operation: "generation",
        input: { prompt: "a boat" },
        output: { duration: 14 }
      })
    )
    expect(tooLong).toMatchObject({ status: 400, code: "invalid_video_duration" })
    expect(tooLong.message).toContain("4 to 12")
    const references = await runFal(setup, {
      model: FAMS,
      operation: "generation",
      input: { prompt: "a boat", reference_mode: "media", reference_images: [{ url: `${media.url}/first.png` }] },
      output: { duration: 5 }
    })
    await expectFailed(references.task, false)
    expect(references.task.error?.message).toMatch(/Reference mode "media" is not supported/)
    expect(setup.fake.requests.length).toBe(before)
  })

  it("with the route narrowed further, what the narrower refuses is refused at creation (400)", async () => {
    const acct = await createAccount(setup.gw, { name: "narrow", wallet_credits: 100 })
    const refused = await rejection(
      api(setup.gw, acct).createVideo({
        model: FAMS_NARROW,
        operation: "generation",
        input: { prompt: "a boat" },
        output: { duration: 11 }
      })
    )
    expect(refused.status).toBe(400)
    expect(refused.code).toBe("invalid_video_duration")
    expect(refused.message).toContain("4 to 10")
  })
})
