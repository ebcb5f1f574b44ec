import { NodeContext } from "@effect/platform-node"
import { Fiber, Layer } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { WorkersLive } from "../../src/Gateway.ts"
import { MediaToolsLive } from "../../src/runtime/node/MediaTools.ts"
import { createAccount } from "../support/adminApi.ts"
import { api } from "../support/api.ts"
import { backends } from "../support/database.ts"
import { startGateway, type TestGateway } from "../support/gateway.ts"
import { lastSeen, ledgerOf, pollTask, query, resultOf, taskErrorOf, videoRequest } from "../support/tasks.ts"

/**
 * A queued task may be claimed by a worker of another release than the one
 * that stored it. The tasks are created while no engine runs (ROLE=api);
 * the test then rewrites their stored requests as another release might
 * have left them, and starts this release's engine on them.
 */

let gw: TestGateway

const create = async (key: string) => (await api(gw, { model: key }).createVideo(videoRequest())).id

describe.each(backends)("stored task requests (%s)", (on) => {
  beforeAll(async () => {
    gw = await startGateway({}, undefined, {}, on)
  })
  afterAll(() => gw?.close())

  it("decodes the current version, and fails with a refund what it cannot read", async () => {
    const acct = await createAccount(gw, { name: "versions", wallet_credits: 100 })
    const [current, newer, broken] = [
      await create(acct.model.key),
      await create(acct.model.key),
      await create(acct.model.key)
    ]
    const stored = await query<{ request_version: number }>(
      gw,
      (sql) => sql`SELECT request_version FROM tasks WHERE id = ${current}`
    )
    expect(stored[0]!.request_version).toBe(1)

    // A version this release does not know, and a version-1 request that lost a member on the way.
    await query(gw, (sql) => sql`UPDATE tasks SET request_version = 99 WHERE id = ${newer}`)
    await query(gw, (sql) => sql`UPDATE tasks SET request = request - 'duration' WHERE id = ${broken}`)

    const engine = gw.runtime.runFork(
      Layer.launch(WorkersLive.pipe(Layer.provide(MediaToolsLive), Layer.provide(NodeContext.layer)))
    )
    try {
      const [ok, unknown, undecodable] = await Promise.all(
        [current, newer, broken].map(async (id) => lastSeen(await pollTask(gw, acct.resource.key, id)))
      )
      expect(ok.status).toBe("succeeded")
      expect(resultOf(ok).videos[0].duration_ms).toBe(4000)
      for (const task of [unknown, undecodable]) {
        expect(task.status).toBe("failed")
        const error = taskErrorOf(task)
        expect(error.code).toBe("video_task_failed")
        expect(error.retryable).toBe(true)
        expect(error.message).toMatch(/release/)
        // Nothing internal reaches the caller: no schema dump, no version numbers.
        expect(error.message).not.toMatch(/duration|99|decode/)
        const ledger = await ledgerOf(gw, task.id)
        expect(ledger.map((l) => l.kind)).toEqual(["charge", "refund"])
        expect(ledger[0]!.wallet_micros + ledger[1]!.wallet_micros).toBe(0)
      }
    } finally {
      await gw.runtime.runPromise(Fiber.interrupt(engine))
    }
  })
})
