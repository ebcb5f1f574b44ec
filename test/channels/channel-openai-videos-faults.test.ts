import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { backend } from "../support/database.ts"
import {
  expectNothingUpstream,
  expectRefunded,
  runTask,
  SHORT,
  startVideosGateway,
  type VideosGateway,
  videoTask
} from "../support/openaiVideos.ts"
import { ledgerOf } from "../support/tasks.ts"

/**
 * The `openai-videos` adapter against the fake OpenAI Videos API's faults
 * (docs/adapters/openai-videos.md, Failures and Tests): throttling with and
 * without Retry-After, 5xx HTML pages, time-outs, a create whose answer never
 * arrives, and the requests refused, by the upstream or before anything is sent
 * because the protocol cannot carry them. Faults are queued per route and used
 * by the next request, so tests that queue create faults run one task at a time
 * or tasks whose outcomes are alike.
 */

let env: VideosGateway
beforeAll(async () => {
  env = await startVideosGateway()
})
afterAll(async () => {
  await env?.close()
})
const run = (body: ReturnType<typeof videoTask>) => runTask(env, body)
const gaps = (requests: ReadonlyArray<{ readonly at: number }>) =>
  requests.slice(1).map((r, i) => r.at - requests[i]!.at)

describe(`the openai-videos channel's faults (${backend})`, () => {
  it("a throttled create waits as long as Retry-After asks, or the engine's backoff without it; charged once", async () => {
    env.fake.faults.create.push({ kind: "rate_limited", retryAfter: "1" }, { kind: "rate_limited" })
    const { creates, task } = await run(videoTask("throttled create"))
    expect(task.status).toBe("succeeded")
    expect(creates).toHaveLength(3)
    const [honoured, backoff] = gaps(creates)
    expect(honoured).toBeGreaterThanOrEqual(950)
    expect(backoff).toBeLessThan(950)
    expect((await ledgerOf(env.gw, task.id)).map((l) => l.kind)).toEqual(["charge"])
  })

  it("a throttled poll is asked again no sooner than retry-after-ms says", async () => {
    env.fake.faults.poll.push({ kind: "rate_limited", retryAfterMs: "1500" })
    const { polls, task } = await run(videoTask("throttled poll"))
    expect(task.status).toBe("succeeded")
    expect(gaps(polls)[0]).toBeGreaterThanOrEqual(1450)
  })

  it("5xx HTML pages: retried and asked again; a create that always meets one fails retryable, refunded", async () => {
    env.fake.faults.create.push({ kind: "html", status: 502 })
    env.fake.faults.poll.push({ kind: "html", status: 503 })
    const healed = await run(videoTask("a page then a video"))
    expect(healed.task.status).toBe("succeeded")
    expect(healed.creates).toHaveLength(2)

    env.fake.faults.create.push(...[502, 503, 504].map((status) => ({ kind: "html" as const, status })))
    const { creates, task } = await run(videoTask("pages all the way"))
    expect(creates).toHaveLength(3)
    expect(task).toMatchObject({ status: "failed", error: { code: "video_task_failed", retryable: true } })
    expectNothingUpstream(env, task)
    await expectRefunded(env.gw, task.id)
  })

  it("a create that hangs, is reset, or whose answer never arrives is never sent again: retryable, refunded", async () => {
    env.fake.faults.create.push({ kind: "hang" }, { kind: "lost" }, { kind: "reset" })
    const prompts = ["in doubt one", "in doubt two", "in doubt three"]
    const runs = await Promise.all(prompts.map((prompt) => run(videoTask(prompt))))
    for (const { creates, task } of runs) {
      expect(creates).toHaveLength(1)
      expect(task).toMatchObject({ status: "failed", error: { code: "video_task_failed", retryable: true } })
      expectNothingUpstream(env, task)
      await expectRefunded(env.gw, task.id)
    }
    // The lost one did create a video upstream: exactly one, which nobody polls or submits again.
    expect(runs.filter((r) => r.video !== undefined)).toHaveLength(1)
  })

  it("a poll that hangs is cut short by the poll time-out; the task still succeeds", async () => {
    env.fake.faults.poll.push({ kind: "hang" })
    const { creates, task } = await run(videoTask("slow relay"))
    expect(task.status).toBe("succeeded")
    expect(creates).toHaveLength(1)
  })

  it("what the protocol cannot carry is refused at task start: final, refunded, nothing sent", async () => {
    const image = { url: "http://127.0.0.1:9/frame.png" }
    const cases = [
      {
        body: videoTask("first and last", { input: { image, reference_images: [image] } }),
        code: "invalid_video_parameter",
        says: /last frame/
      },
      {
        body: videoTask("three looks", {
          model: SHORT,
          input: { reference_mode: "images", reference_images: [image] },
          output: { duration: 8, aspect_ratio: "16:9" }
        }),
        code: "unsupported_reference_mode",
        says: /reference_mode "images"/
      },
      {
        body: videoTask("a silent film", { output: { generate_audio: false } }),
        code: "invalid_video_parameter",
        says: /generate_audio/
      },
      {
        body: videoTask("seeded", { provider_options: { famV: { seed: 7 } } }),
        code: "invalid_provider_options",
        says: /provider_options\.famV/
      }
    ]
    const runs = await Promise.all(cases.map((c) => run(c.body)))
    for (const [i, { creates, task }] of runs.entries()) {
      expect(creates).toHaveLength(0)
      expect(task).toMatchObject({ status: "failed", error: { code: cases[i]!.code, retryable: false } })
      expect(task.error?.message).toMatch(cases[i]!.says)
      expectNothingUpstream(env, task)
      await expectRefunded(env.gw, task.id)
    }
  })

  it("refused upstream: parameters and content policy are final; the channel's key refused is retryable", async () => {
    // The fake takes Sora's seconds (4, 8, 12): 6, valid for the model, is refused by the upstream.
    const sixSeconds = await run(videoTask("six seconds", { output: { duration: 6 } }))
    expect(sixSeconds.creates.map((c) => c.fields.seconds)).toEqual(["6"])
    expect(sixSeconds.task.error).toEqual({
      code: "video_task_failed",
      message: "The video service refused this request's parameters.",
      retryable: false
    })

    const moderation = { error: { type: "invalid_request_error", code: "moderation_blocked", message: "flagged" } }
    env.fake.faults.create.push({ kind: "status", status: 400, body: moderation })
    const refused = await run(videoTask("refused at the door"))
    expect(refused.task.error).toMatchObject({ code: "video_task_failed", retryable: false })
    expect(refused.task.error?.message).toMatch(/content policy/)

    env.fake.faults.create.push({ kind: "status", status: 401, body: { error: { code: "invalid_api_key" } } })
    const unauthorised = await run(videoTask("wrong key"))
    expect(unauthorised.task.error).toMatchObject({ code: "video_task_failed", retryable: true })

    for (const { creates, task } of [sixSeconds, refused, unauthorised]) {
      expect(creates).toHaveLength(1)
      expect(task.status).toBe("failed")
      expectNothingUpstream(env, task)
      await expectRefunded(env.gw, task.id)
    }
  })
})
