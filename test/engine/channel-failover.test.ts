import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type FakeImages, startFakeImages } from "../fakes/openai-images.ts"
import { createAccount } from "../support/adminApi.ts"
import { api } from "../support/api.ts"
import { alsoWith, configWith } from "../support/config.ts"
import { backend } from "../support/database.ts"
import { freePort, startGateway, type TestGateway } from "../support/gateway.ts"
import { lastSeen, ledgerOf, pollTask, query, resultOf } from "../support/tasks.ts"

/**
 * Failover: channels of a model are tried in config order, and a submit the
 * upstream certainly did not take moves to the next one once the channel's
 * retries are spent. `down` is an openai-images channel whose port refuses
 * connections; `openai` speaks to the fake OpenAI Images API; the sandbox is
 * last. The breaker is off here (`breaker_cooldown_s: 0`), so no case
 * depends on another's; it has a gateway of its own below, and its cool-down
 * is tested with the test clock (test/engine/breakers.test.ts).
 */

const KEY = "sk-upstream-failover"
let fake: FakeImages
let gw: TestGateway

/** A gateway whose channels have this breaker cool-down. */
const failoverGateway = async (breakerCooldownS: number) => {
  const closed = await freePort()
  const config = configWith("models.json", (models) => {
    const openai = {
      adapter: "openai-images",
      credentials: { api_key: { env: "FAILOVER_KEY" } },
      timeouts: { submit_s: 5 },
      breaker_cooldown_s: breakerCooldownS
    }
    models.channels.down = { ...openai, base_url: `http://127.0.0.1:${closed}/v1` }
    models.channels.openai = { ...openai, base_url: fake.url }
    models.models["provx-image-1"].channels = ["down", { channel: "openai", upstream_model: "gpt-image-1" }]
    models.models["provy-image-1-fast"].channels = [
      { channel: "openai", upstream_model: "gpt-image-1-mini" },
      "sandbox"
    ]
  })
  alsoWith(config, "limits.json", (limits) => {
    limits.engine = { poll_interval_ms: 200, heartbeat_s: 1, lease_s: 10, retry_base_ms: 50, generate_retries: 1 }
    for (const rate of Object.values(limits.rate_limits) as Array<any>) rate.burst = rate.per_second = 10_000
  })
  return startGateway({ ROLE: "all", CONFIG_DIR: config, FAILOVER_KEY: KEY })
}
const breakerGateway = () => failoverGateway(600)

beforeAll(async () => {
  fake = await startFakeImages(KEY)
  gw = await failoverGateway(0)
})
afterAll(async () => {
  await gw?.close()
  await fake?.close()
})

const run = async (model: string, on: TestGateway = gw) => {
  const acct = await createAccount(on, { name: "failover", wallet_credits: 10 })
  const before = fake.requests.length
  const created = await api(on, acct).createImageReply({
    model,
    operation: "generation",
    input: { prompt: "a red kite" },
    output: { size: "512x512" }
  })
  expect(created.status).toBe(202)
  const task = lastSeen(await pollTask(on, acct.resource.key, created.task.id, undefined, { kind: "image" }))
  const channels = await query<{ channel: string }>(on, (sql) => sql`SELECT channel FROM tasks WHERE id = ${task.id}`)
  const attempts = await query<{ channel: string; outcome: string }>(
    on,
    (sql) => sql`SELECT channel, outcome FROM task_attempts WHERE task_id = ${task.id} ORDER BY attempt`
  )
  return { task, upstream: fake.requests.slice(before), channel: channels[0]!.channel, attempts }
}

describe(`failover between a model's channels (${backend})`, () => {
  it("a first channel that refuses connections: the task succeeds on the next, charged once", async () => {
    const { attempts, channel, task, upstream } = await run("provx-image-1")
    expect(task.status).toBe("succeeded")
    expect(channel).toBe("openai")
    expect(upstream).toHaveLength(1)
    expect(upstream[0]!.fields.model).toBe("gpt-image-1")
    expect(attempts).toEqual([{ channel: "down", outcome: "failover" }, { channel: "openai", outcome: "succeeded" }])
    expect((await ledgerOf(gw, task.id)).map((l) => l.kind)).toEqual(["charge"])
    // The caller sees none of it.
    expect(JSON.stringify(task)).not.toMatch(/down|openai|gpt-image/)
  })

  it("a first channel that answers 503 every time: retried, then the sandbox takes the task", async () => {
    fake.faults.push({ kind: "html", status: 503 }, { kind: "html", status: 503 })
    const { channel, task, upstream } = await run("provy-image-1-fast")
    expect(upstream).toHaveLength(2)
    expect(task.status).toBe("succeeded")
    expect(channel).toBe("sandbox")
    expect(resultOf(task).images).toHaveLength(1)
    expect((await ledgerOf(gw, task.id)).map((l) => l.kind)).toEqual(["charge"])
  })

  it("with the breaker off, a channel that did not take the last task is tried again at once", async () => {
    fake.faults.push({ kind: "rate_limited" }, { kind: "rate_limited" })
    const tripped = await run("provy-image-1-fast")
    expect(tripped.upstream).toHaveLength(2)
    expect(tripped.channel).toBe("sandbox")
    const again = await run("provy-image-1-fast")
    expect(again.upstream).toHaveLength(1)
    expect(again).toMatchObject({ channel: "openai", task: { status: "succeeded" } })
  })

  it("a refusal of the request itself is not failed over: the task fails with its refund", async () => {
    fake.faults.push({ kind: "moderation", stage: "input" })
    const { channel, task, upstream } = await run("provy-image-1-fast")
    expect(upstream).toHaveLength(1)
    expect(channel).toBe("openai")
    expect(task).toMatchObject({ status: "failed", error: { code: "image_task_failed", retryable: false } })
    expect((await ledgerOf(gw, task.id)).map((l) => l.kind)).toEqual(["charge", "refund"])
  })

  it("the breaker, on a gateway of its own: the channel that did not take a task is skipped for its cool-down", async () => {
    const own = await breakerGateway()
    try {
      fake.faults.push({ kind: "rate_limited" }, { kind: "rate_limited" })
      const tripped = await run("provy-image-1-fast", own)
      expect(tripped.upstream).toHaveLength(2)
      expect(tripped.channel).toBe("sandbox")
      // Open (for 10 minutes): the next task goes to the sandbox without a request to the channel.
      const skipped = await run("provy-image-1-fast", own)
      expect(skipped.upstream).toHaveLength(0)
      expect(skipped).toMatchObject({ channel: "sandbox", task: { status: "succeeded" } })
      expect(skipped.attempts).toEqual([
        { channel: "openai", outcome: "failover" },
        { channel: "sandbox", outcome: "succeeded" }
      ])
    } finally {
      await own.close()
    }
  })

  it("the last channel refusing too: the task fails with 524 and its refund", async () => {
    await fake.close()
    const { task } = await run("provx-image-1")
    expect(task).toMatchObject({ status: "failed", error: { code: "524", retryable: true } })
    expect((await ledgerOf(gw, task.id)).map((l) => l.kind)).toEqual(["charge", "refund"])
  })
})
