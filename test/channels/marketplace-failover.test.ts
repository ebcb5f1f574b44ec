import { createServer } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type FakeFal, startFakeFal } from "../fakes/fal.ts"
import { type FakeKling, type Fault as KlingFault, startFakeKling } from "../fakes/kling.ts"
import { operator } from "../support/adminApi.ts"
import { configWith } from "../support/config.ts"
import { backend } from "../support/database.ts"
import { FAL_KEY } from "../support/fal.ts"
import { startGateway, type TestGateway } from "../support/gateway.ts"
import { ACCOUNT } from "../support/kling.ts"
import { ledgerOf } from "../support/tasks.ts"
import { createAndWait, engineRow, expectChargedOnce, quickEngine } from "../support/upstream.ts"

/**
 * Failover across providers: a famK model routed to Kling first and to fal
 * second. When Kling certainly did not take the task (429, 5xx, connection
 * refused before sending), it runs on fal: one charge, no refund, one fal
 * request. When Kling may hold it (the create was sent and no answer came),
 * it is never submitted to fal: Kling's own lookup decides.
 */

const NATIVE_FIRST = "provx-famK-3.0-720p"
const DOWN_FIRST = "provx-famK-3.0-1080p"

let kling: FakeKling
let fal: FakeFal
let gw: TestGateway

/** A loopback port nothing listens on: a connection there is refused before a byte is sent. */
const closedPort = async () => {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const port = (server.address() as { port: number }).port
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

beforeAll(async () => {
  ;[kling, fal] = await Promise.all([startFakeKling(ACCOUNT), startFakeFal(FAL_KEY)])
  const down = await closedPort()
  const config = configWith("models.json", (models) => {
    const native = {
      adapter: "kling",
      api: "current",
      credentials: { api_key: { env: "KLING_API_KEY" } },
      concurrency: 10,
      timeouts: { submit_s: 2, poll_s: 2 },
      // Each test starts with Kling tried again, not skipped by the last test's refusals.
      breaker_cooldown_s: 0
    }
    models.channels.klingai = { ...native, base_url: kling.url }
    models.channels["kling-down"] = { ...native, base_url: `http://127.0.0.1:${down}` }
    models.channels["fal-market"] = {
      adapter: "fal",
      base_url: fal.url,
      credentials: { api_key: { env: "FAL_KEY" } },
      concurrency: 10,
      timeouts: { submit_s: 2, poll_s: 2 }
    }
    const onFal = { channel: "fal-market", upstream_model: "fal-ai/kling-video/v3/pro/text-to-video" }
    models.models[NATIVE_FIRST].channels = [{ channel: "klingai", upstream_model: "kling-3.0" }, onFal]
    models.models[DOWN_FIRST].channels = [{ channel: "kling-down", upstream_model: "kling-3.0" }, onFal]
  })
  quickEngine(config)
  gw = await startGateway({ ROLE: "all", CONFIG_DIR: config, KLING_API_KEY: ACCOUNT.apiKey, FAL_KEY })
}, 90_000)
afterAll(async () => {
  await gw?.close()
  await kling?.close()
  await fal?.close()
})

const run = async (model: string, prompt: string, faults: ReadonlyArray<KlingFault> = []) => {
  kling.faults.create.push(...faults)
  const before = { kling: kling.requests.length, fal: fal.requests.length }
  const { task } = await createAndWait(gw, {
    model,
    operation: "generation",
    input: { prompt },
    output: { duration: 5 }
  }, { intervalMs: 50 })
  const klingCreates = kling.requests.slice(before.kling).filter((r) => r.method === "POST")
  const falSubmits = fal.requests.slice(before.fal).filter((r) => r.method === "POST")
  return { task, klingCreates, falSubmits }
}

/** Ran on fal: one request there, charged once, no refund, Kling's attempt recorded as a failover. */
const expectRanOnFal = async (
  { falSubmits, task }: Awaited<ReturnType<typeof run>>,
  firstChannel: string
) => {
  expect(task.status).toBe("succeeded")
  expect(falSubmits).toHaveLength(1)
  expect(falSubmits[0]!.path).toBe("/fal-ai/kling-video/v3/pro/text-to-video")
  expect(await engineRow(gw, task.id)).toMatchObject({ channel: "fal-market" })
  await expectChargedOnce(gw, task.id)
  const view = await operator(gw).task(task.id)
  expect(view.attempts[0]).toMatchObject({ channel: firstChannel, outcome: "failover" })
  expect(view.attempts.at(-1)).toMatchObject({ channel: "fal-market", outcome: "succeeded" })
  // The caller sees neither channel.
  expect(JSON.stringify(task)).not.toMatch(/kling|fal-market|fal-ai/i)
}

describe(`failover from Kling to fal (${backend})`, () => {
  it("Kling throttling (429 on every try) moves the task to fal: one charge, no refund", async () => {
    const throttled: Array<KlingFault> = [{ kind: "rate_limited" }, { kind: "rate_limited" }, { kind: "rate_limited" }]
    const result = await run(NATIVE_FIRST, "throttled on kling", throttled)
    // Tried as often as the engine retries a channel (generate_retries 2), then moved.
    expect(result.klingCreates).toHaveLength(3)
    expect([...kling.tasks.values()].filter((t) => t.body?.prompt === "throttled on kling")).toHaveLength(0)
    await expectRanOnFal(result, "klingai")
  })

  it("Kling answering 5xx pages on every try moves the task to fal: one charge, no refund", async () => {
    const broken: Array<KlingFault> = [
      { kind: "html", status: 502 },
      { kind: "html", status: 503 },
      { kind: "error", status: 500, code: 5000 }
    ]
    const result = await run(NATIVE_FIRST, "kling is broken", broken)
    expect(result.klingCreates).toHaveLength(3)
    await expectRanOnFal(result, "klingai")
  })

  it("Kling refusing the connection (nothing sent) moves the task to fal: one charge, no refund", async () => {
    const result = await run(DOWN_FIRST, "kling is down")
    expect(result.klingCreates).toHaveLength(0)
    await expectRanOnFal(result, "kling-down")
  })

  it("Kling ambiguous (the create sent, its answer lost) is never resubmitted to fal", async () => {
    for (const fault of [{ kind: "lost" }, { kind: "reset" }] as const) {
      const prompt = `kling answer ${fault.kind}`
      const result = await run(NATIVE_FIRST, prompt, [fault])
      expect(result.falSubmits).toHaveLength(0)
      // Kling's lookup by our id found the task it had created: adopted, one upstream task, one charge.
      expect(result.task.status).toBe("succeeded")
      expect([...kling.tasks.values()].filter((t) => t.body?.prompt === prompt)).toHaveLength(1)
      expect(await engineRow(gw, result.task.id)).toMatchObject({ channel: "klingai" })
      await expectChargedOnce(gw, result.task.id)
    }
  })

  it("Kling silent (the create sent, no answer at all) is never resubmitted to fal", async () => {
    const before = kling.requests.length
    const result = await run(NATIVE_FIRST, "kling hangs", [{ kind: "hang" }])
    expect(result.falSubmits).toHaveLength(0)
    expect([...fal.queued.values()].filter((q) => q.input.prompt === "kling hangs")).toHaveLength(0)
    // Kling's lookup by our id said it held no such task, so only then was it created again, on Kling.
    const lookup = kling.requests.slice(before).findIndex((r) => r.query["external_task_ids"] === result.task.id)
    const creates = kling.requests.slice(before).flatMap((r, i) => (r.method === "POST" ? [i] : []))
    expect(creates).toHaveLength(2)
    expect(lookup).toBeGreaterThan(creates[0]!)
    expect(lookup).toBeLessThan(creates[1]!)
    expect(result.task.status).toBe("succeeded")
    expect(await engineRow(gw, result.task.id)).toMatchObject({ channel: "klingai" })
    expect((await ledgerOf(gw, result.task.id)).map((l) => l.kind)).toEqual(["charge"])
  })
})
