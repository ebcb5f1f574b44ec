import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createAccount } from "../support/adminApi.ts"
import { backend } from "../support/database.ts"
import { eventually } from "../support/eventually.ts"
import { REPLICATE_TOKEN, type ReplicateSetup, startReplicateGateway } from "../support/replicate.ts"
import { taskApi } from "../support/taskApi.ts"
import { eventsOf, query } from "../support/tasks.ts"
import { expectRefunded } from "../support/upstream.ts"

/**
 * Cancelling a task that waits on Replicate (docs/adapters/replicate.md,
 * Protocol): the gateway's cancel sends Replicate's
 * `POST /predictions/{id}/cancel`, which stops a prediction whether it is
 * still starting or already processing; ours ends `task_cancelled`, refunded.
 */

const MODEL = "provx-famV-3.1-fast-720p"
let r: ReplicateSetup

beforeAll(async () => {
  r = await startReplicateGateway({ [MODEL]: [{ channel: "marketplace", upstream_model: "google/veo-3.1-fast" }] })
}, 60_000)
afterAll(() => r?.close())

const waiting = async (prompt: string) => {
  const acct = await createAccount(r.gw, { name: "cancels", wallet_credits: 100 })
  const body = { model: MODEL, operation: "generation", input: { prompt }, output: { duration: 4 } } as const
  const created = await taskApi(r.gw, acct).createVideoReply(body)
  expect(created.status).toBe(202)
  const id = created.task.id
  await eventually(async () => {
    const [row] = await query<{ run_state: string; polls: number }>(
      r.gw,
      (sql) => sql`SELECT run_state, polls FROM tasks WHERE id = ${id}`
    )
    return row !== undefined && ["waiting", "polling"].includes(row.run_state) && row.polls > 0 || undefined
  }, "the task waits on Replicate, read once")
  return { acct, id }
}

describe(`cancel through Replicate (${backend})`, () => {
  for (
    const [stage, scenario] of [["starting", { starting: Infinity }], ["processing", {
      starting: 0,
      processing: Infinity
    }]] as const
  ) {
    it(`a prediction still ${stage} is cancelled upstream; ours ends task_cancelled, refunded`, async () => {
      r.fake.scenarios.push(scenario)
      const prompt = `cancel while ${stage}`
      const { acct, id } = await waiting(prompt)
      // A 200: the typed client decodes the contract's answer or fails.
      const reply = await taskApi(r.gw, acct).cancelVideo(id)
      expect(reply).toMatchObject({ id, status: "failed", error: { code: "task_cancelled", retryable: false } })
      await expectRefunded(r.gw, id)
      expect((await eventsOf(r.gw, id)).map((e) => e.type)).toEqual(["video.task.failed"])
      const [prediction] = [...r.fake.predictions.values()].filter((p) => p.input.prompt === prompt)
      expect(prediction!.canceled).toBe(true)
      const sent = r.fake.requests.filter((q) => q.path === `/v1/predictions/${prediction!.id}/cancel`)
      expect(sent).toHaveLength(1)
      expect(sent[0]!.headers.authorization).toBe(`Bearer ${REPLICATE_TOKEN}`)
      expect(JSON.stringify(reply)).not.toContain(prediction!.id)
    })
  }
})
