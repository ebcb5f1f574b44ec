import { NodeContext } from "@effect/platform-node"
import { SqlClient } from "@effect/sql"
import { ConfigProvider, Effect, Either, Layer, Logger, LogLevel, ManagedRuntime } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { Principal } from "../../src/accounts/Account.ts"
import { Accounts } from "../../src/accounts/Accounts.ts"
import { MigratedServicesLive } from "../../src/Gateway.ts"
import { NodeServicesLive } from "../../src/runtime/node/NodeServices.ts"
import { type CreateContext, Tasks } from "../../src/tasks/Tasks.ts"
import { backend, createDatabase, seedPglite } from "../support/database.ts"
import { videoRequest } from "../support/tasks.ts"

/**
 * The tasks service with no server and no HTTP: a caller and a body in,
 * the queued task or the feature's tagged error out, against the real
 * services on the run's database (creating a task charges the account in
 * the same transaction, so the books are checked too).
 */

let runtime: ManagedRuntime.ManagedRuntime<Tasks | Accounts | SqlClient.SqlClient, unknown>
let close: () => Promise<void>

beforeAll(async () => {
  const dataDir = mkdtempSync(join(tmpdir(), "gw-tasks-service-"))
  const db = await createDatabase()
  if (db.url === undefined) seedPglite(dataDir)
  const config = new Map<string, string>([
    ["DATA_DIR", dataDir],
    ["CONFIG_DIR", resolve("config")],
    ["ALLOW_PRIVATE_TARGETS", "true"],
    ...(db.url ? [["DATABASE_URL", db.url] as const] : [])
  ])
  runtime = ManagedRuntime.make(
    MigratedServicesLive.pipe(
      Layer.provide(NodeServicesLive),
      Layer.provide(NodeContext.layer),
      Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(config))),
      Layer.provide(Logger.minimumLogLevel(LogLevel.Warning))
    )
  )
  close = async () => {
    await runtime.dispose()
    await db.drop()
    rmSync(dataDir, { recursive: true, force: true })
  }
}, 60_000)
afterAll(async () => {
  await close?.()
})

/** A new account with this many wallet credits, as the principal of its model token. */
const caller = (walletCredits: number, idempotencyKey: string | null = null) =>
  runtime.runPromise(Effect.gen(function*() {
    const accounts = yield* Accounts
    const account = yield* accounts.create({ name: "service", wallet_credits: walletCredits })
    const principal: Principal = { accountId: account.id, keyId: "key_none", kind: "model", group: account.group }
    return { principal, idempotencyKey, traceparent: null } satisfies CreateContext
  }))

const run = <A, E>(effect: Effect.Effect<A, E, Tasks | Accounts | SqlClient.SqlClient>) =>
  runtime.runPromise(Effect.either(effect))

const ledger = (accountId: string) =>
  runtime.runPromise(
    Effect.flatMap(SqlClient.SqlClient, (sql) =>
      sql<{ kind: string; task_id: string | null; wallet: number }>`
      SELECT kind, task_id, wallet_micros::float8 AS wallet FROM ledger WHERE account_id = ${accountId}
        AND kind <> 'credit' ORDER BY created_at`)
  )

describe(`the tasks service, without HTTP (${backend})`, () => {
  it("creates a queued, pre-charged video task; the same key and content replay it, other content is a conflict", async () => {
    const context = await caller(10, "service-key-1")
    const first = await run(Effect.flatMap(Tasks, (t) => t.createVideo(context, videoRequest())))
    expect(Either.isRight(first)).toBe(true)
    const created = Either.getOrThrow(first)
    expect(created.replayed).toBe(false)
    expect(created.task).toMatchObject({ object: "video.task", status: "queued", model: "provy-famS-2.0-480p" })
    expect((await ledger(context.principal.accountId)).map((l) => [l.kind, l.task_id])).toEqual([
      ["charge", created.task.id]
    ])

    const again = Either.getOrThrow(await run(Effect.flatMap(Tasks, (t) => t.createVideo(context, videoRequest()))))
    expect(again).toMatchObject({ replayed: true, task: { id: created.task.id } })
    const other = await run(
      Effect.flatMap(Tasks, (t) => t.createVideo(context, videoRequest({ input: { prompt: "another fox" } })))
    )
    expect(Either.isLeft(other) && other.left._tag).toBe("IdempotencyConflict")
    expect(await ledger(context.principal.accountId)).toHaveLength(1)
  })

  it("refuses a request the model's table does not allow, and an account that cannot pay: nothing created or charged", async () => {
    const context = await caller(10)
    const unknown = await run(Effect.flatMap(Tasks, (t) => t.createVideo(context, videoRequest({ model: "no-such" }))))
    expect(Either.isLeft(unknown) && unknown.left).toMatchObject({ _tag: "UnsupportedModel", status: 400 })
    const tooLong = await run(
      Effect.flatMap(Tasks, (t) => t.createVideo(context, videoRequest({ output: { duration: 99 } })))
    )
    expect(Either.isLeft(tooLong) && tooLong.left).toMatchObject({ status: 400 })
    const poor = await caller(0)
    const refused = await run(Effect.flatMap(Tasks, (t) => t.createVideo(poor, videoRequest())))
    expect(Either.isLeft(refused) && refused.left._tag).toBe("InsufficientBalance")
    expect(await ledger(context.principal.accountId)).toEqual([])
    expect(await ledger(poor.principal.accountId)).toEqual([])
  })

  it("creates an image task from a JSON submission, charged per image", async () => {
    const context = await caller(10)
    const body = {
      model: "provx-image-1",
      operation: "generation",
      input: { prompt: "a kite" },
      output: { count: 2, size: "1024x1024" }
    }
    const created = Either.getOrThrow(
      await run(Effect.flatMap(Tasks, (t) => t.createImage(context, { body, content: body, store: Effect.void })))
    )
    expect(created.task).toMatchObject({ object: "image.task", status: "queued" })
    const [charge] = await ledger(context.principal.accountId)
    expect(charge).toMatchObject({ kind: "charge", task_id: created.task.id })
    expect(charge!.wallet).toBeLessThan(0)
  })
})
