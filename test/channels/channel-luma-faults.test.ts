import { createServer } from "node:http"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { adminApi } from "../support/adminApi.ts"
import { backend } from "../support/database.ts"
import { listenOnLoopback } from "../support/fakeServer.ts"
import {
  DOWN,
  expectChargedOnce,
  expectNothingUpstream,
  expectRefunded,
  FAMK,
  FAMS,
  generationsOf,
  type LumaSetup,
  lumaTask,
  runLuma,
  startLumaGateway
} from "../support/luma.ts"

/**
 * The `luma` adapter against the fake Dream Machine API's faults
 * (docs/adapters/luma.md, Failures, Check and Tests): a 429 with Luma's
 * retry hint and 5xx answers (the task still succeeds, one generation
 * upstream), a connection reset and an answer slower than the time-out
 * (a create never sent twice), Luma's refusals and failed generations, an
 * expired video, a closed port; and the channel check with the right key,
 * a wrong key, a closed port and an HTML page. Faults are queued per route
 * and used by the next request, so tests that queue them run one task at
 * a time.
 */

let env: LumaSetup
let closePage: () => Promise<void>
beforeAll(async () => {
  // 200 with an HTML page on every path: a proxy's or a captive portal's answer.
  const page = await listenOnLoopback(
    createServer((_, res) => res.writeHead(200, { "content-type": "text/html" }).end("<html>Welcome</html>"))
  )
  closePage = page.close
  env = await startLumaGateway({
    "luma-wrong": { credentials: { api_key: { env: "LUMA_WRONG_KEY" } } },
    "luma-garbage": { base_url: `http://127.0.0.1:${page.port}/dream-machine/v1` }
  }, { LUMA_WRONG_KEY: "luma-a-key-of-another-account" })
}, 60_000)
afterAll(async () => {
  await env?.close()
  await closePage?.()
})

const creates = (prompt: string) => env.fake.requests.filter((r) => r.method === "POST" && r.body?.prompt === prompt)

describe(`the luma channel's faults (${backend})`, () => {
  it("a 429 with Retry-After and a 500 on the create: tried again, one generation, charged once", async () => {
    env.fake.faults.create.push({ kind: "rate_limited", retryAfter: "1" }, { kind: "status", status: 500 })
    const { task } = await runLuma(env, lumaTask(FAMS, "throttled then broken then made"))
    expect(task.status).toBe("succeeded")
    expect(creates("throttled then broken then made")).toHaveLength(3)
    expect(generationsOf(env.fake, "throttled then broken then made")).toHaveLength(1)
    expectNothingUpstream(env, task)
    await expectChargedOnce(env.gw, task.id)
  })

  it("a 429, an HTML 502 and a reset on the status query change nothing: asked again, one generation", async () => {
    env.fake.faults.get.push({ kind: "rate_limited", retryAfter: "1" }, { kind: "html", status: 502 }, {
      kind: "reset"
    })
    const { task } = await runLuma(env, lumaTask(FAMK, "polled through the storm"))
    expect(task.status).toBe("succeeded")
    expect(env.fake.faults.get).toHaveLength(0)
    expect(creates("polled through the storm")).toHaveLength(1)
    await expectChargedOnce(env.gw, task.id)
  })

  it("a status query slower than poll_s is asked again; a broken video download is fetched again", async () => {
    env.fake.faults.get.push({ kind: "hang" })
    env.fake.faults.cdn.push({ kind: "reset" }, { kind: "html", status: 503 })
    const { task } = await runLuma(env, lumaTask(FAMS, "slow to answer"))
    expect(task.status).toBe("succeeded")
    expect(creates("slow to answer")).toHaveLength(1)
    expect(env.fake.faults.cdn).toHaveLength(0)
  })

  it("a create that is reset, slower than submit_s, or whose answer never arrives is never sent again: retryable, refunded", async () => {
    for (
      const [fault, prompt] of [["reset", "reset create"], ["hang", "hung create"], ["lost", "lost create"]] as const
    ) {
      env.fake.faults.create.push({ kind: fault })
      const { task } = await runLuma(env, lumaTask(FAMS, prompt))
      expect(creates(prompt)).toHaveLength(1)
      expect(task).toMatchObject({ status: "failed", error: { code: "video_task_failed", retryable: true } })
      expectNothingUpstream(env, task)
      await expectRefunded(env.gw, task.id)
    }
    // The lost one did create a generation upstream: exactly one, which nobody creates again.
    expect(generationsOf(env.fake, "lost create")).toHaveLength(1)
  })

  it("a create that always meets a 5xx fails retryable with its refund after the engine's tries", async () => {
    env.fake.faults.create.push(...[500, 503, 502].map((status) => ({ kind: "status" as const, status })))
    const { task } = await runLuma(env, lumaTask(FAMS, "five hundreds"))
    expect(creates("five hundreds")).toHaveLength(3)
    expect(task).toMatchObject({ status: "failed", error: { code: "video_task_failed", retryable: true } })
    expect(generationsOf(env.fake, "five hundreds")).toHaveLength(0)
    await expectRefunded(env.gw, task.id)
  })

  it("Luma's 400 (its validation) is final: not retryable, refunded, sent once", async () => {
    const { task } = await runLuma(env, lumaTask(FAMS, "ab"))
    expect(creates("ab")).toHaveLength(1)
    expect(task).toMatchObject({ status: "failed", error: { code: "video_task_failed", retryable: false } })
    expectNothingUpstream(env, task)
    await expectRefunded(env.gw, task.id)
  })

  it("failed generations: moderation and unreadable frames are final, Luma's own failure retryable; all refunded", async () => {
    const cases = [
      ["refused prompt", "Advanced prompt moderation failed", false, /content safety/],
      ["blacklisted prompt", "Contains blacklisted words", false, /content safety/],
      ["unreadable frames", "Failed to read user input frames", false, /reference images/],
      ["broken job", "Job failed", true, /could not be generated/]
    ] as const
    for (const [prompt, failureReason] of cases) {
      env.fake.lives.push({ prompt, states: ["queued", "dreaming", "failed"], failureReason })
    }
    const runs = await Promise.all(cases.map(([prompt]) => runLuma(env, lumaTask(FAMK, prompt))))
    runs.forEach(({ task }, i) => {
      const [, , retryable, message] = cases[i]!
      expect(task.status).toBe("failed")
      expect(task.error).toMatchObject({ code: "video_task_failed", retryable })
      expect(task.error!.message).toMatch(message)
      expectNothingUpstream(env, task)
    })
    for (const { task } of runs) await expectRefunded(env.gw, task.id)
    for (const [prompt] of cases) expect(creates(prompt)).toHaveLength(1)
  })

  it("a video gone from Luma's CDN (403) fails the task with its refund", async () => {
    env.fake.lives.push({ prompt: "gone before stored", states: ["completed"], expired: true })
    const { task } = await runLuma(env, lumaTask(FAMS, "gone before stored"))
    expect(task).toMatchObject({
      status: "failed",
      error: { code: "video_task_failed", message: "The generated video expired before it could be stored." }
    })
    await expectRefunded(env.gw, task.id)
  })

  it("a channel whose port is closed: retried, then failed retryable with its refund, nothing sent", async () => {
    const before = env.fake.requests.length
    const { task } = await runLuma(env, lumaTask(DOWN, "nobody home"))
    expect(task).toMatchObject({ status: "failed", error: { code: "video_task_failed", retryable: true } })
    expect(env.fake.requests.length).toBe(before)
    expectNothingUpstream(env, task)
    await expectRefunded(env.gw, task.id)
  })

  it("the check: ok with the key, credentials_refused with a wrong one, unreachable, unexpected_answer; nothing created", async () => {
    const before = env.fake.generations.size
    const check = (name: string) => adminApi(env.gw)((c) => c.adminChannels.checkChannel({ path: { name } }))
    const expected = {
      "luma-dream": { ok: true, result: "ok", detail: "GET /credits: HTTP 200" },
      "luma-wrong": { ok: false, result: "credentials_refused" },
      "luma-down": { ok: false, result: "unreachable" },
      "luma-garbage": { ok: false, result: "unexpected_answer" }
    }
    for (const [name, answer] of Object.entries(expected)) {
      const reply = await check(name)
      expect(reply, `${name}: ${reply.detail}`).toMatchObject(answer)
      expect(reply.detail).not.toMatch(/luma-0123456789abcdef|a-key-of-another-account/)
    }
    const credits = env.fake.requests.filter((r) => r.path === "/dream-machine/v1/credits")
    expect(credits.map((r) => r.headers.authorization)).toEqual([
      "Bearer luma-0123456789abcdef-test-key",
      "Bearer luma-a-key-of-another-account"
    ])
    expect(env.fake.generations.size).toBe(before)
  })
})
