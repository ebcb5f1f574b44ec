import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createAccount } from "../support/adminApi.ts"
import { backend } from "../support/database.ts"
import { eventually } from "../support/eventually.ts"
import { type FakeGatewayEnv, startFakeGatewayEnv, VIDEO, videoTask } from "../support/fakeGateway.ts"
import { ADMIN_TOKEN } from "../support/gateway.ts"
import { raw } from "../support/http.ts"
import { type ReplicateSetup, startReplicateGateway } from "../support/replicate.ts"
import { startS3rver } from "../support/s3rver.ts"
import { taskApi } from "../support/taskApi.ts"
import { query } from "../support/tasks.ts"
import { createAndWait } from "../support/upstream.ts"

/**
 * The losses an operator sees (docs/operating.md, Money), made the way they
 * happen, through the providers' fakes: a result object storage refused for
 * good after the provider made (and billed) it; a cancel after the provider
 * started, which it bills; a provider that made a longer video than the
 * caller asked and was charged for. Each route declares what its provider
 * bills, so each loss carries its cost.
 */

/** A task for Replicate's Seedance endpoint, which makes silent videos only. */
const silent = (prompt: string) => {
  const body = videoTask(prompt)
  return { ...body, output: { ...body.output, generate_audio: false } }
}

const losses = async (gw: { url: string }) => {
  const from = Math.floor(Date.now() / 1000) - 600
  const res = await raw(gw, "GET", `/admin/v1/usage/losses?from=${from}&to=${from + 1200}`, { key: ADMIN_TOKEN })
  expect(res.status).toBe(200)
  return (res.body as any).data as Array<any>
}

describe(`losses (${backend})`, () => {
  let replicate: ReplicateSetup
  let s3: Awaited<ReturnType<typeof startS3rver>>
  let chained: FakeGatewayEnv
  beforeAll(async () => {
    // Replicate bills a prediction that ran by its predict_time; the store has no such bucket: every put is refused.
    s3 = await startS3rver("gw-losses-other")
    replicate = await startReplicateGateway(
      {
        [VIDEO]: [{
          channel: "marketplace",
          upstream_model: "bytedance/seedance-1-pro",
          cost: { unit: "task", price: 0.5 }
        }]
      },
      {},
      { ...s3.env, S3_BUCKET: "gw-losses-missing" }
    )
    // Another gateway upstream bills the seconds it delivered.
    chained = await startFakeGatewayEnv()
  }, 120_000)
  afterAll(async () => {
    await replicate?.close()
    await s3?.close()
    await chained?.close()
  })

  it("a result storage refused for good after the provider billed it is a loss, with its cost", async () => {
    replicate.fake.scenarios.push({ starting: 0, processing: 1 })
    const { task } = await createAndWait(replicate.gw, silent("stored nowhere"))
    expect(task.status).toBe("failed")
    const loss = (await losses(replicate.gw)).find((l) => l.task_id === task.id)
    expect(loss).toMatchObject({ reasons: ["billed_while_refunded"], upstream_cost: 0.5, credits_refunded: 0.16 })
  }, 90_000)

  it("a cancel after the provider started is a loss, with its cost", async () => {
    replicate.fake.scenarios.push({ starting: 0, processing: Infinity })
    const acct = await createAccount(replicate.gw, { name: "cancels", wallet_credits: 100 })
    const created = await taskApi(replicate.gw, acct).createVideoReply(silent("cancelled while it ran"))
    const id = created.task.id
    await eventually(async () => {
      const [row] = await query<{ polls: number }>(replicate.gw, (sql) => sql`SELECT polls FROM tasks WHERE id = ${id}`)
      return (row?.polls ?? 0) > 0
    }, "the prediction polled once, processing")
    expect((await taskApi(replicate.gw, acct).cancelVideo(id)).status).toBe("failed")
    const loss = (await losses(replicate.gw)).find((l) => l.task_id === id)
    expect(loss).toMatchObject({ reasons: ["billed_while_refunded"], upstream_cost: 0.5, credits_refunded: 0.16 })
  }, 90_000)

  it("a provider that made a longer video than was asked is a usage mismatch", async () => {
    chained.fake.lives.push({ prompt: "made longer", statuses: ["succeeded"], durationMs: 10_000 })
    chained.fake.lives.push({ prompt: "made as asked", statuses: ["succeeded"] })
    const { task: longer } = await createAndWait(chained.gw, videoTask("made longer"))
    const { task: asAsked } = await createAndWait(chained.gw, videoTask("made as asked"))
    expect([longer.status, asAsked.status]).toEqual(["succeeded", "succeeded"])
    const found = await losses(chained.gw)
    expect(found.find((l) => l.task_id === longer.id)).toMatchObject({
      reasons: ["usage_mismatch"],
      usage: { unit: "second", reported: 10, charged: 4 },
      credits_refunded: 0
    })
    expect(found.some((l) => l.task_id === asAsked.id)).toBe(false)
  }, 90_000)
})
