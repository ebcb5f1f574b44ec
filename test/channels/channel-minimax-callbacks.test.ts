import { createServer } from "node:http"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startFakeMinimax } from "../fakes/minimax.ts"
import { createAccount } from "../support/adminApi.ts"
import { api } from "../support/api.ts"
import { backend } from "../support/database.ts"
import { eventually } from "../support/eventually.ts"
import { listenOnLoopback } from "../support/fakeServer.ts"
import { errorOf, raw } from "../support/http.ts"
import {
  expectChargedOnce,
  expectNothingUpstream,
  hailuoTask,
  KEY,
  M768,
  type MinimaxSetup,
  startMinimaxGateway
} from "../support/minimax.ts"
import { query } from "../support/tasks.ts"

/**
 * MiniMax's callbacks as an accelerator, never as truth
 * (docs/adapters/minimax.md, Callbacks): with `callbacks: true` each create
 * carries `callback_url`; MiniMax's verification request is answered 200
 * with its `challenge` echoed, and each status update then makes its task
 * due for a poll at once. Polling is slowed to 20 s, so a task that ends
 * within seconds did so because MiniMax called back. A body that is neither
 * is refused 400 and hastens nothing.
 */

const SLOW_POLL_MS = 20_000
const CALLBACK_PATH = "/v1/upstream-callbacks/"
let env: MinimaxSetup

beforeAll(async () => {
  env = await startMinimaxGateway({ callbacks: true, engine: { poll_interval_ms: SLOW_POLL_MS } })
}, 120_000)
afterAll(async () => {
  await env?.close()
})

const create = async (prompt: string) => {
  const acct = await createAccount(env.gw, { name: "minimax callbacks", wallet_credits: 100 })
  const created = await api(env.gw, acct).createVideoReply(hailuoTask(M768, prompt) as any)
  expect(created.status).toBe(202)
  return { key: acct.resource.key, id: created.task.id, at: Date.now() }
}

const upstreamOf = (prompt: string) => [...env.fake.tasks.values()].filter((t) => t.body.prompt === prompt)

/** The channel's callback URL, as the adapter sent it in a create. */
const callbackUrl = () => {
  const sent = env.fake.requests.find((r) => r.method === "POST" && typeof r.body.callback_url === "string")
  expect(sent, "a create with callback_url").toBeDefined()
  return String(sent!.body.callback_url)
}

const polls = () => env.fake.requests.filter((r) => r.path === "/v1/query/video_generation").length

describe(`MiniMax callbacks with polling slowed to ${SLOW_POLL_MS / 1000} s (${backend})`, () => {
  it("the challenge echoed, then the updates end the task within seconds; one upstream task", async () => {
    env.fake.lives.push({ prompt: "called back", statuses: ["Queueing", "Processing", "Success"] })
    const task = await create("called back")
    const seen = await api(env.gw, { resource: task.key }).waitTask("video", task.id, undefined, {
      intervalMs: 100,
      deadlineMs: 15_000
    })
    const last = seen.at(-1)!
    expect(last.status).toBe("succeeded")
    // Far sooner than the first scheduled poll: the callbacks did it.
    expect(Date.now() - task.at).toBeLessThan(SLOW_POLL_MS / 2)

    const [upstream, ...more] = upstreamOf("called back")
    expect(more).toEqual([])
    const creates = env.fake.requests.filter((r) => r.method === "POST" && r.body.prompt === "called back")
    expect(creates).toHaveLength(1)
    expect(creates[0]!.body).toEqual({
      model: "MiniMax-Hailuo-02",
      prompt: "called back",
      duration: 6,
      resolution: "768P",
      callback_url: creates[0]!.body.callback_url
    })
    const url = new URL(String(creates[0]!.body.callback_url))
    expect(url.origin).toBe(env.gw.url)
    expect(url.pathname.startsWith(CALLBACK_PATH)).toBe(true)

    // MiniMax's verification: the challenge came back exactly, in a 200 JSON answer.
    expect(upstream!.verified).toBe(true)
    const calls = env.fake.callbacks.filter((c) => c.taskId === upstream!.id)
    const [verification] = calls
    expect(verification).toMatchObject({ kind: "challenge", status: 200 })
    expect(verification!.contentType).toMatch(/^application\/json/)
    expect(JSON.parse(verification!.answer)).toEqual({ challenge: verification!.body.challenge })
    // Then the updates, each answered 204: processing, then success with the file.
    const updates = await eventually(
      async () => {
        const now = env.fake.callbacks.filter((c) => c.taskId === upstream!.id && c.kind === "update")
        return now.length === 2 ? now : undefined
      },
      "both status updates"
    )
    expect(updates.map((u) => [u.body.status, u.status])).toEqual([["processing", 204], ["success", 204]])
    expect(updates[1]!.body).toMatchObject({ task_id: upstream!.id, file_id: upstream!.fileId })

    expectNothingUpstream(env, last)
    await expectChargedOnce(env.gw, task.id)
  }, 60_000)

  it("a verification request: its challenge echoed exactly, 200 JSON, nothing nudged", async () => {
    const url = callbackUrl()
    const before = polls()
    for (const challenge of ["c-0123456789abcdef", "with \"quotes\" <b>and</b> ünïcode ✓"]) {
      const reply = await fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ challenge })
      })
      expect(reply.status).toBe(200)
      expect(reply.headers.get("content-type")).toMatch(/^application\/json/)
      expect(await reply.json()).toEqual({ challenge })
    }
    expect(polls()).toBe(before)
  })

  it("a body that is neither a challenge nor a status update is refused 400 and nudges nothing", async () => {
    // Queued for 12 s: MiniMax posts no update meanwhile (it reports processing, success, failed).
    env.fake.lives.push({
      prompt: "not yet called back",
      statuses: [...Array.from({ length: 40 }, () => "Queueing"), "Processing", "Success"]
    })
    const task = await create("not yet called back")
    const url = callbackUrl()
    const [upstream] = await eventually(
      async () => (upstreamOf("not yet called back").length === 1 ? upstreamOf("not yet called back") : undefined),
      "the upstream task"
    )
    await eventually(async () => {
      const [row] = await query<{ run_state: string }>(
        env.gw,
        (sql) => sql`SELECT run_state FROM tasks WHERE id = ${task.id}`
      )
      return row !== undefined && ["waiting", "polling"].includes(row.run_state) || undefined
    }, "the task waits upstream")
    const runAt = async () =>
      (await query<{ run_at: string }>(env.gw, (sql) => sql`SELECT run_at::text FROM tasks WHERE id = ${task.id}`))[0]
        ?.run_at
    const due = await runAt()
    const before = polls()
    const bodies = [
      "not json at all",
      "[]",
      "null",
      JSON.stringify({ status: "success", file_id: "1", base_resp: { status_code: 0, status_msg: "success" } }),
      JSON.stringify({ task_id: 12345, status: "success" }),
      JSON.stringify({ challenge: { nested: upstream!.id } }),
      JSON.stringify({ challenge: "x".repeat(5000) })
    ]
    for (const body of bodies) {
      const reply = await raw(env.gw, "POST", new URL(url).pathname, {
        headers: { "content-type": "application/json" },
        body
      })
      expect(reply.status, body.slice(0, 60)).toBe(400)
      expect(errorOf(reply.body)?.code).toBe("invalid_callback")
      expect(JSON.stringify(reply.body)).not.toContain(upstream!.id)
    }
    expect(await runAt()).toBe(due)
    expect(polls()).toBe(before)
    const now = await api(env.gw, { resource: task.key }).getVideo(task.id)
    expect(now.status).not.toBe("succeeded")
  }, 60_000)

  it("the fake speaks MiniMax's protocol: a receiver that does not echo the challenge gets no updates", async () => {
    const received: Array<unknown> = []
    const receiver = await listenOnLoopback(createServer((req, res) => {
      const chunks: Array<Buffer> = []
      req.on("data", (c: Buffer) => chunks.push(c))
      req.on("end", () => {
        received.push(JSON.parse(Buffer.concat(chunks).toString("utf8")))
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ challenge: "something else" }))
      })
    }))
    const fake = await startFakeMinimax(KEY)
    try {
      const reply = await fetch(`${fake.url}/v1/video_generation`, {
        method: "POST",
        headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
        body: JSON.stringify({
          model: "MiniMax-Hailuo-02",
          prompt: "a wrong echo",
          duration: 6,
          resolution: "768P",
          callback_url: `http://127.0.0.1:${receiver.port}/hook`
        })
      })
      const { task_id } = (await reply.json()) as { task_id: string }
      const task = fake.tasks.get(task_id)!
      await eventually(async () => task.verified !== undefined || undefined, "the verification answered")
      expect(task.verified).toBe(false)
      expect(fake.callbacks.map((c) => c.kind)).toEqual(["challenge"])
      // The task itself still ends (polling finds it); only the updates are never sent.
      await eventually(async () => {
        const q = await fetch(`${fake.url}/v1/query/video_generation?task_id=${task_id}`, {
          headers: { authorization: `Bearer ${KEY}` }
        })
        return ((await q.json()) as { status: string }).status === "Success" || undefined
      }, "the task succeeds")
      expect(received).toEqual([{ challenge: fake.callbacks[0]!.body.challenge }])
    } finally {
      await fake.close()
      await receiver.close()
    }
  }, 30_000)
})
