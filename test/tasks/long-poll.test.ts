import { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { preferredWait } from "../../src/tasks/LongPollHttp.ts"
import { VideoTask } from "../../src/tasks/Task.ts"
import { TaskWatchers } from "../../src/tasks/TaskWatchers.ts"
import { createAccount } from "../support/adminApi.ts"
import { api } from "../support/api.ts"
import { unthrottled } from "../support/config.ts"
import { backend } from "../support/database.ts"
import { eventually } from "../support/eventually.ts"
import { startGateway, type TestGateway } from "../support/gateway.ts"
import { expectError, raw, type RawReply } from "../support/http.ts"
import { videoRequest } from "../support/tasks.ts"

let gw: TestGateway
beforeAll(async () => {
  gw = await startGateway({ CONFIG_DIR: unthrottled() })
})
afterAll(() => gw?.close())

const newTask = async () => {
  const acct = await createAccount(gw, { name: "poller", wallet_credits: 100 })
  const created = await api(gw, acct).createVideo(videoRequest())
  return { acct, id: created.id }
}

// Raw: the `Prefer` header sent and `Preference-Applied` answered are the point (the typed client sends neither).
const get = (key: string, id: string, prefer?: string) =>
  raw(gw, "GET", `/v1/video/tasks/${id}`, { key, ...(prefer === undefined ? {} : { headers: { prefer } }) })

/** The task an answer carried, decoded with the contract's schema. */
const taskOf = (reply: RawReply) => Schema.decodeUnknownSync(VideoTask)(reply.body)

const finish = (id: string) =>
  gw.runtime.runPromise(
    Effect.flatMap(SqlClient.SqlClient, (sql) =>
      sql`UPDATE tasks SET status = 'failed', run_state = 'done', completed_at = 1700000000,
      error = ${JSON.stringify({ code: "generation_failed", message: "no", retryable: false })}::jsonb
      WHERE id = ${id}`)
  )

const followers = () => gw.runtime.runPromise(Effect.map(TaskWatchers, (w) => w.stats().followers))

describe(`long poll (${backend})`, () => {
  it("Prefer: wait=N answers when the task becomes terminal, with Preference-Applied", async () => {
    const { acct, id } = await newTask()
    const before = await followers()
    const answer = get(acct.resource.key, id, "wait=30")
    // The request is waiting on the task (registered for its changes) before the task ends.
    await eventually(async () => (await followers()) > before || undefined, "the long poll waits")
    await finish(id)
    const reply = await answer
    expect(reply.status).toBe(200)
    expect(reply.headers.get("preference-applied")).toBe("wait=30")
    expect(taskOf(reply).status).toBe("failed")
    expect(reply.body).toEqual((await get(acct.resource.key, id)).body)
    expect(await followers()).toBe(before)
  })

  it("past N seconds: the task as it is; a terminal task at once; N over 60 counts as 60", async () => {
    const { acct, id } = await newTask()
    const waited = await get(acct.resource.key, id, "wait=1")
    expect(waited.status).toBe(200)
    expect(waited.headers.get("preference-applied")).toBe("wait=1")
    expect(taskOf(waited).status).toBe("queued")
    await finish(id)
    const capped = await get(acct.resource.key, id, "respond-async, wait=3600")
    expect(capped.headers.get("preference-applied")).toBe("wait=60")
    expect(taskOf(capped).status).toBe("failed")
  })

  it("a Prefer without a usable wait is ignored: the plain answer, no Preference-Applied", async () => {
    const { acct, id } = await newTask()
    for (const prefer of ["wait=0", "wait=abc", "wait=-5", "handling=lenient", "wait"]) {
      const reply = await get(acct.resource.key, id, prefer)
      expect(reply.status).toBe(200)
      expect(reply.headers.get("preference-applied")).toBeNull()
      expect(taskOf(reply).status).toBe("queued")
    }
  })

  it("another account's task: 404 at once, wait or not", async () => {
    const { id } = await newTask()
    const other = await createAccount(gw, { name: "other" })
    expectError(await get(other.resource.key, id, "wait=30"), 404, "task_not_found")
  })

  it("reads the preference as RFC 7240 says", () => {
    expect(preferredWait("wait=10")).toBe(10)
    expect(preferredWait("Wait = 5")).toBe(5)
    expect(preferredWait("respond-async, wait=7")).toBe(7)
    expect(preferredWait("wait=\"12\"")).toBe(12)
    expect(preferredWait("wait=61")).toBe(60)
    expect(preferredWait("wait=99999999999999999999")).toBe(60)
    expect(preferredWait("wait=0")).toBeUndefined()
    expect(preferredWait("wait=1.5")).toBeUndefined()
    expect(preferredWait(undefined)).toBeUndefined()
  })
})
