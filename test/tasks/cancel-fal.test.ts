import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createAccount } from "../support/adminApi.ts"
import { backend } from "../support/database.ts"
import { eventually } from "../support/eventually.ts"
import { FAL_KEY, type FalSetup, startFalGateway } from "../support/fal.ts"
import { taskApi } from "../support/taskApi.ts"
import { eventsOf, query } from "../support/tasks.ts"
import { expectRefunded } from "../support/upstream.ts"

/**
 * Cancelling a task that waits on fal (docs/adapters/fal.md, Cancel): the
 * gateway's cancel sends fal's `PUT {cancel_url}`; while the request is
 * queued fal accepts it and ours ends `task_cancelled`, refunded. (fal's
 * refusal of a completed request's cancel is checked at the adapter, with
 * the official client, in test/channels/channel-fal-protocol.test.ts.)
 */

const MODEL = "provx-famK-3.0-1080p"
const ENDPOINT = "fal-ai/kling-video/v3/pro/text-to-video"
let f: FalSetup

beforeAll(async () => {
  f = await startFalGateway({ [MODEL]: [{ channel: "fal-market", upstream_model: ENDPOINT }] })
}, 60_000)
afterAll(() => f?.close())

/** A task whose request fal holds, read at least once. */
const waiting = async (prompt: string) => {
  const acct = await createAccount(f.gw, { name: "fal cancels", wallet_credits: 100 })
  const body = { model: MODEL, operation: "generation", input: { prompt }, output: { duration: 5 } } as const
  const created = await taskApi(f.gw, acct).createVideoReply(body)
  expect(created.status).toBe(202)
  const id = created.task.id
  await eventually(async () => {
    const [row] = await query<{ run_state: string; polls: number }>(
      f.gw,
      (sql) => sql`SELECT run_state, polls FROM tasks WHERE id = ${id}`
    )
    return row !== undefined && ["waiting", "polling"].includes(row.run_state) && row.polls > 0
  }, "the task waits on fal, read once")
  const queued = [...f.fake.queued.values()].find((q) => q.input.prompt === prompt)!
  return { acct, id, queued }
}

describe(`cancel through fal (${backend})`, () => {
  it("a queued request is cancelled at fal; ours ends task_cancelled, refunded, its event written", async () => {
    f.fake.scenarios.push({ queued: Infinity })
    const prompt = "cancel while queued at fal"
    const { acct, id, queued } = await waiting(prompt)
    // A 200: the typed client decodes the contract's answer or fails.
    const reply = await taskApi(f.gw, acct).cancelVideo(id)
    expect(reply).toMatchObject({ id, status: "failed", error: { code: "task_cancelled", retryable: false } })
    await expectRefunded(f.gw, id)
    expect((await eventsOf(f.gw, id)).map((e) => e.type)).toEqual(["video.task.failed"])
    expect(queued.cancelled).toBe(true)
    const sent = f.fake.requests.filter((q) => q.method === "PUT" && q.path.endsWith(`/requests/${queued.id}/cancel`))
    expect(sent).toHaveLength(1)
    expect(sent[0]!.headers.authorization).toBe(`Key ${FAL_KEY}`)
    expect(JSON.stringify(reply)).not.toContain(queued.id)
  })
})
