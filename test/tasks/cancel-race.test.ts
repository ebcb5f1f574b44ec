import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Cancellation } from "../../src/tasks/engine/Cancellation.ts"
import { TaskOutcomes } from "../../src/tasks/engine/TaskOutcomes.ts"
import { TaskQueue } from "../../src/tasks/engine/TaskQueue.ts"
import { createAccount } from "../support/adminApi.ts"
import { api } from "../support/api.ts"
import { checkBooks } from "../support/books.ts"
import { unthrottled } from "../support/config.ts"
import { backend } from "../support/database.ts"
import { startGateway, type TestGateway } from "../support/gateway.ts"
import type { Rows } from "../support/installation.ts"
import { videoRequest } from "../support/tasks.ts"

/**
 * A cancel racing the engine, 200 times: the API alone (ROLE=api), the test
 * playing the worker through the engine's own services, the cancel and the
 * worker's write started together (on PostgreSQL on two connections), each
 * first in turn. Half
 * race a completion of a running in-process task; half race a claim and its
 * completion while the task is still queued. Never two terminal states,
 * never two refunds, one event per task, the books balanced.
 */

const ROUNDS = 200
const GRANTED = { wallet: 10_000, subscription: 0 }

let gw: TestGateway
beforeAll(async () => {
  gw = await startGateway({ CONFIG_DIR: unthrottled() })
})
afterAll(() => gw?.close())

type Services = TaskQueue | TaskOutcomes | Cancellation | SqlClient.SqlClient
const run = <A, E>(effect: Effect.Effect<A, E, Services>) => gw.runtime.runPromise(effect) as Promise<A>

const rows: Rows = (text, params) =>
  run(Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe(text, (params ?? []) as Array<any>))) as Promise<any>

/** Claims the one queued task of the sandbox channel and completes it, as a worker would. */
const claimAndComplete = Effect.gen(function*() {
  const queue = yield* TaskQueue
  const outcomes = yield* TaskOutcomes
  const [claim] = yield* queue.claim("sandbox", "wrk_race", 1, { concurrency: 1000 })
  if (claim === undefined) return "nothing claimed" as const
  return yield* outcomes.succeed(claim, [], { videos: [] }).pipe(
    Effect.as("succeeded" as const),
    Effect.catchTag("StaleClaim", () => Effect.succeed("stale" as const))
  )
})

const cancel = (accountId: string, id: string) =>
  Effect.flatMap(Cancellation, (c) => c.cancel(accountId, "video", id)).pipe(
    Effect.map((task) => ({ ok: true as const, task })),
    Effect.catchTag("TaskNotCancellable", (e) => Effect.succeed({ ok: false as const, message: e.message }))
  )

describe(`cancel racing completion (${backend})`, () => {
  it(`${ROUNDS} rounds: exactly one terminal state and at most one refund each`, async () => {
    const acct = await createAccount(gw, { name: "racer", wallet_credits: GRANTED.wallet })
    const outcomes = new Map<string, "succeeded" | "failed">()
    const tally = { cancelWon: 0, completionWon: 0 }
    for (let round = 0; round < ROUNDS; round++) {
      const created = await api(gw, acct).createVideoReply(videoRequest())
      expect(created.status).toBe(202)
      const id = created.task.id
      const queuedRace = round % 2 === 1
      let worker: Effect.Effect<string, never, Services>
      if (queuedRace) {
        worker = claimAndComplete
      } else {
        // Claimed first: the race is the running task's completion against the cancel.
        const [claim] = await run(
          Effect.flatMap(TaskQueue, (q) => q.claim("sandbox", "wrk_race", 1, { concurrency: 1000 }))
        )
        expect(claim?.id).toBe(id)
        worker = Effect.flatMap(TaskOutcomes, (o) => o.succeed(claim!, [], { videos: [] })).pipe(
          Effect.as("succeeded"),
          Effect.catchTag("StaleClaim", () => Effect.succeed("stale"))
        )
      }
      // Which is started first alternates too, so each side wins some rounds even where the database serialises.
      const [answer, work] = round % 4 < 2
        ? await run(Effect.all([cancel(acct.id, id), worker], { concurrency: 2 }))
        : await run(
          Effect.map(Effect.all([worker, cancel(acct.id, id)], { concurrency: 2 }), ([w, a]) => [a, w] as const)
        )
      const [task] = await rows(`SELECT status, error->>'code' AS code FROM tasks WHERE id = $1`, [id])
      if (answer.ok) {
        tally.cancelWon++
        expect(task.status, id).toBe("failed")
        expect(task.code, id).toBe("task_cancelled")
        expect(answer.task.status).toBe("failed")
        expect(work, id).not.toBe("succeeded")
      } else {
        tally.completionWon++
        expect(task.status, id).toBe("succeeded")
        expect(work, id).toBe("succeeded")
        expect(answer.message).toMatch(/already succeeded|being handed|changing state/)
      }
      outcomes.set(id, task.status)
    }
    // Per task one charge, a refund exactly when it failed, one event of its terminal type; balances add up.
    await checkBooks(rows, acct.id, GRANTED, outcomes, 0)
    console.log(`cancel race (${backend}): ${JSON.stringify(tally)} of ${ROUNDS}`)
    expect(tally.cancelWon + tally.completionWon).toBe(ROUNDS)
  }, 600_000)
})
