import { createServer, type Server } from "node:http"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { stateOf } from "../../channels/alibaba/States.ts"
import { adminApi } from "../support/adminApi.ts"
import {
  type AlibabaSetup,
  expectChargedOnce,
  expectNothingUpstream,
  expectRefunded,
  famW,
  FAMW_480,
  FAMW_720,
  runAlibaba,
  startAlibabaGateway,
  WRONG_KEY
} from "../support/alibaba.ts"
import { backend } from "../support/database.ts"
import { listenOnLoopback } from "../support/fakeServer.ts"

/**
 * The `alibaba` adapter against the fake DashScope's faults and refusals
 * (docs/adapters/alibaba.md, Failures, Check): throttling and 5xx retried
 * into one upstream task; broken polls changing nothing; a create whose fate
 * is unknown never sent again; DashScope's refusals by code (the key, the
 * balance, content moderation, parameters); failed tasks; a lapsed link; a
 * status DashScope cannot tell until the deadline; the channel check.
 * Faults are queued per route and used by the next request, so the tests
 * that queue create faults run one task at a time.
 */

let setup: AlibabaSetup
let page: Server

beforeAll(async () => {
  // 200 with an HTML page on every path: a proxy's or a captive portal's answer.
  page = createServer((_, res) => res.writeHead(200, { "content-type": "text/html" }).end("<html>Welcome</html>"))
  const garbage = `http://127.0.0.1:${(await listenOnLoopback(page)).port}`
  setup = await startAlibabaGateway(
    {
      [FAMW_720]: [{ channel: "dashscope", upstream_model: "wan2.5-t2v-preview" }],
      [FAMW_480]: [{ channel: "dashscope-short", upstream_model: "wan2.5-t2v-preview" }]
    },
    {
      "dashscope-short": { timeouts: { submit_s: 2, poll_s: 2, deadline_s: 3 } },
      "dashscope-garbage": { base_url: garbage }
    }
  )
}, 90_000)
afterAll(async () => {
  await setup?.close()
  await new Promise<void>((done) => page ? page.close(() => done()) : done())
})

const upstreamOf = (prompt: string) => [...setup.fake.tasks.values()].filter((t) => t.body.input.prompt === prompt)

const expectFailed = async (task: any, retryable: boolean) => {
  expect(task).toMatchObject({ status: "failed", error: { code: "video_task_failed", retryable } })
  expectNothingUpstream(setup, task)
  await expectRefunded(setup.gw, task.id)
}

describe(`the alibaba channel's faults (${backend})`, { timeout: 90_000 }, () => {
  it("a 429 Throttling.RateQuota (Retry-After honoured) and a 500 InternalError at create: retried, one task, charged once", async () => {
    setup.fake.faults.create.push(
      { kind: "rate_limited", retryAfter: "1" },
      { kind: "error", status: 500, code: "InternalError" }
    )
    const run = await runAlibaba(setup, famW(FAMW_720, "throttled then broken"))
    expect(run.task.status).toBe("succeeded")
    expect(run.creates).toHaveLength(3)
    expect(run.creates[1]!.at - run.creates[0]!.at).toBeGreaterThanOrEqual(950)
    expect(upstreamOf("throttled then broken")).toHaveLength(1)
    await expectChargedOnce(setup.gw, run.task.id)
    expectNothingUpstream(setup, run.task)
  })

  it("broken status requests (429, an HTML 503, a reset) change nothing: the task goes on and succeeds", async () => {
    setup.fake.faults.poll.push({ kind: "rate_limited" }, { kind: "html", status: 503 }, { kind: "reset" })
    const run = await runAlibaba(setup, famW(FAMW_720, "polls that break"))
    expect(run.task.status).toBe("succeeded")
    expect(run.creates).toHaveLength(1)
    expect(setup.fake.faults.poll).toHaveLength(0)
    await expectChargedOnce(setup.gw, run.task.id)
  })

  it("a create that hangs, is reset, or whose answer never arrives is never sent again: retryable, refunded", async () => {
    for (const kind of ["hang", "reset", "lost"] as const) {
      setup.fake.faults.create.push({ kind })
      const prompt = `in doubt: ${kind}`
      const run = await runAlibaba(setup, famW(FAMW_720, prompt))
      expect(run.creates).toHaveLength(1)
      await expectFailed(run.task, true)
      // Only the lost answer left a task upstream, which nothing polls or submits again.
      expect(upstreamOf(prompt)).toHaveLength(kind === "lost" ? 1 : 0)
    }
  })

  it("the key or the balance refused (InvalidApiKey 401, Arrearage 400): not taken, not retried, refunded", async () => {
    for (const [status, code] of [[401, "InvalidApiKey"], [400, "Arrearage"], [403, "AccessDenied"]] as const) {
      setup.fake.faults.create.push({ kind: "error", status, code })
      const run = await runAlibaba(setup, famW(FAMW_720, `refused: ${code}`))
      expect(run.creates).toHaveLength(1)
      await expectFailed(run.task, true)
    }
  })

  it("content moderation (DataInspectionFailed) and a refused parameter (InvalidParameter) at create are final", async () => {
    setup.fake.faults.create.push({ kind: "error", status: 400, code: "DataInspectionFailed" })
    const unsafe = await runAlibaba(setup, famW(FAMW_720, "a prompt moderation refuses"))
    expect(unsafe.task.error?.message).toMatch(/content safety/)
    await expectFailed(unsafe.task, false)
    setup.fake.faults.create.push({
      kind: "error",
      status: 400,
      code: "InvalidParameter",
      message: "The size is not match the allowed size."
    })
    const invalid = await runAlibaba(setup, famW(FAMW_720, "a parameter DashScope refuses"))
    await expectFailed(invalid.task, false)
    for (const run of [unsafe, invalid]) expect(run.creates).toHaveLength(1)
  })

  it("a task DashScope ended FAILED: moderation final, its own error worth a new task; a lapsed link refunded", async () => {
    setup.fake.lives.push(
      {
        prompt: "refused output",
        statuses: ["RUNNING", "FAILED"],
        failure: { code: "DataInspectionFailed", message: "Output data may contain inappropriate content." }
      },
      { prompt: "model fell over", statuses: ["FAILED"] },
      { prompt: "link lapsed", statuses: ["SUCCEEDED"], expired: true }
    )
    const prompts = ["refused output", "model fell over", "link lapsed"]
    const [refused, broken, lapsed] = await Promise.all(prompts.map((p) => runAlibaba(setup, famW(FAMW_720, p))))
    await expectFailed(refused!.task, false)
    await expectFailed(broken!.task, true)
    expect(lapsed!.task.error?.message).toMatch(/expired/)
    await expectFailed(lapsed!.task, true)
    // Run at once, each saw the others' requests: one create per prompt.
    for (const [i, run] of [refused!, broken!, lapsed!].entries()) {
      expect(run.creates.filter((c) => c.body.input.prompt === prompts[i])).toHaveLength(1)
    }
  })

  it("a task DashScope says UNKNOWN is asked again until the channel's deadline, then failed retryable, refunded", async () => {
    setup.fake.lives.push({ prompt: "nobody knows", statuses: ["UNKNOWN"] })
    const run = await runAlibaba(setup, famW(FAMW_480, "nobody knows"))
    const [upstream] = upstreamOf("nobody knows")
    expect(upstream!.polls).toBeGreaterThanOrEqual(2)
    expect(run.creates).toHaveLength(1)
    await expectFailed(run.task, true)
  })
})

describe(`the alibaba channel check (${backend})`, () => {
  const check = (name: string) => adminApi(setup.gw)((c) => c.adminChannels.checkChannel({ path: { name } }))

  it("ok with the key, credentials_refused with another, unreachable on a closed port, unexpected_answer for a page", async () => {
    const creates = setup.fake.requests.filter((r) => r.method === "POST").length
    const expected = {
      dashscope: "ok",
      "dashscope-wrong": "credentials_refused",
      "dashscope-down": "unreachable",
      "dashscope-garbage": "unexpected_answer"
    }
    for (const [name, result] of Object.entries(expected)) {
      const reply = await check(name)
      expect(reply, `${name}: ${reply.detail}`).toMatchObject({ ok: result === "ok", result })
      expect(reply.detail).not.toContain(WRONG_KEY)
    }
    expect((await check("dashscope")).detail).toBe("GET /api/v1/tasks (one item): HTTP 200")
    const lists = setup.fake.requests.filter((r) => r.method === "GET" && r.path === "/api/v1/tasks")
    expect(lists.at(-1)!.query.get("page_size")).toBe("1")
    // Nothing created by any check.
    expect(setup.fake.requests.filter((r) => r.method === "POST").length).toBe(creates)
  })
})

describe("what DashScope bills (usage)", () => {
  it("a SUCCEEDED task: its usage.video_duration in seconds, billed; a FAILED or CANCELED one is not", () => {
    const usage = { video_duration: 10, video_ratio: "1920*1080", video_count: 1 }
    const done = stateOf({ output: { task_status: "SUCCEEDED", video_url: "https://oss/v.mp4?Expires=1" }, usage })
    expect(done).toMatchObject({
      _tag: "Succeeded",
      billed: true,
      usage: { unit: "second", quantity: 10, fields: usage },
      results: [{ url: "https://oss/v.mp4?Expires=1", mimeType: "video/mp4", expiresAt: 1000 }]
    })
    for (const task_status of ["FAILED", "CANCELED"]) {
      expect(stateOf({ output: { task_status, code: "InternalError" } })).toMatchObject({
        _tag: "Failed",
        billed: false
      })
    }
    expect(stateOf({ output: { task_status: "UNKNOWN" } })._tag).toBe("Unknown")
    expect(stateOf({ output: { task_status: "SUCCEEDED" } })).toMatchObject({ _tag: "Succeeded", results: [] })
  })
})
