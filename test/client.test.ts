import { Deferred, Effect, Exit, Fiber, Layer } from "effect"
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  createClient,
  createVideoTask,
  GatewayClient,
  GatewayError,
  NodeClientLive,
  TaskFailed,
  waitForTask,
  WaitTimeout
} from "../src/client/index.ts"
import { mtgEnv, readmeExample, run, TSX } from "./support/cli.ts"
import { configWith } from "./support/config.ts"
import { backend } from "./support/database.ts"
import { startGateway, type TestGateway } from "./support/gateway.ts"
import { createAccount } from "./support/http.ts"
import { probeBytes } from "./support/media.ts"
import { makeImage } from "./support/uploads.ts"

/**
 * The typed client against a gateway whose results need the resource key
 * (`url_auth: resource_api_key`), polling every second. The CLI's tests
 * cover `url_auth: none`.
 */

let gw: TestGateway
let keys: { modelToken: string; resourceKey: string }
let client: ReturnType<typeof createClient>
let dir: string

beforeAll(async () => {
  const config = configWith("limits.json", (limits) => {
    limits.poll_interval_s = 1
    limits.engine = { poll_interval_ms: 200 }
  })
  const models = JSON.parse(readFileSync(join(config, "models.json"), "utf8"))
  models.channels.sandbox.url_auth = "resource_api_key"
  writeFileSync(join(config, "models.json"), JSON.stringify(models))
  gw = await startGateway({ ROLE: "all", CONFIG_DIR: config })
  const acct = await createAccount(gw, { name: "client", wallet_credits: 1000 })
  keys = { modelToken: acct.model.key, resourceKey: acct.resource.key }
  client = createClient({ baseUrl: gw.url, ...keys })
  dir = mkdtempSync(join(tmpdir(), "gw-client-"))
  writeFileSync(join(dir, "boat.png"), await makeImage("png", "320x240"))
})
afterAll(async () => {
  await client?.close()
  await gw?.close()
  if (dir) rmSync(dir, { recursive: true, force: true })
})

const slowTask = (delayMs: number) =>
  client.createVideoTask({
    model: "provy-famS-2.0-480p",
    operation: "generation",
    input: { prompt: "a slow tide" },
    output: { duration: 4, generate_audio: false },
    provider_options: { sandbox: { delay_ms: delayMs } }
  })

const rejection = (promise: Promise<unknown>) => promise.then(() => undefined, (error: unknown) => error)

describe(`the typed client (${backend})`, () => {
  it("runs the README's example as written, from a directory with the package installed beside it", async () => {
    const app = join(dir, "app")
    mkdirSync(join(app, "node_modules"), { recursive: true })
    symlinkSync(resolve("."), join(app, "node_modules", "media-task-gateway"))
    writeFileSync(join(app, "boat.png"), readFileSync(join(dir, "boat.png")))
    writeFileSync(join(app, "example.mts"), readmeExample("client"))
    const result = await run(TSX, ["example.mts"], {
      env: mtgEnv(gw.url, { model: { key: keys.modelToken }, resource: { key: keys.resourceKey } }),
      cwd: app
    })
    expect(result.code, result.stderr).toBe(0)
    expect(result.stdout).toMatch(/^succeeded 100$/m)
    const [file] = readdirSync(join(app, "results"))
    expect(result.stdout).toContain(join("results", file!))
    // A result behind the resource key, fetched with it.
    expect((await probeBytes(readFileSync(join(app, "results", file!)))).video?.codec).toBe("h264")
  }, 180_000)

  it(
    "waitForTask stops at its time limit with WaitTimeout; the task goes on and a later wait sees it succeed",
    async () => {
      const { task, retryAfter } = await slowTask(6000)
      expect(retryAfter).toBe(1)
      const error = await rejection(client.waitForTask("video", task.id, { timeout: "1 second", interval: 1 }))
      expect(error).toBeInstanceOf(WaitTimeout)
      expect(error).toMatchObject({ task_id: task.id, seconds: 1 })
      expect(["queued", "in_progress"]).toContain((error as WaitTimeout).status)
      const states: Array<string> = []
      const done = await client.waitForTask("video", task.id, { retryAfter, onProgress: (t) => states.push(t.status) })
      expect(done.status).toBe("succeeded")
      expect(states).toContain("in_progress")
    },
    120_000
  )

  it("an AbortSignal cancels a wait, and so does interrupting the Effect", async () => {
    const { task, retryAfter } = await slowTask(20_000)
    const controller = new AbortController()
    let looks = 0
    const reason = new Error("stop waiting")
    const aborted = await rejection(client.waitForTask("video", task.id, {
      retryAfter,
      signal: controller.signal,
      onProgress: () => {
        looks++
        controller.abort(reason)
      }
    }))
    expect(aborted).toBe(reason)
    expect(looks).toBe(1)

    const program = Effect.gen(function*() {
      const firstLook = yield* Deferred.make<void>()
      const fiber = yield* Effect.fork(waitForTask("video", task.id, {
        retryAfter,
        onProgress: () => Effect.runSync(Deferred.succeed(firstLook, undefined))
      }))
      yield* Deferred.await(firstLook)
      yield* Fiber.interrupt(fiber)
      return yield* Fiber.await(fiber)
    })
    const exit = await Effect.runPromise(
      program.pipe(
        Effect.provide(GatewayClient.layer({ baseUrl: gw.url, ...keys }).pipe(Layer.provideMerge(NodeClientLive)))
      )
    )
    expect(Exit.isInterrupted(exit)).toBe(true)
    // Only the waits ended: the task itself is still running.
    expect((await client.getTask("video", task.id)).task.status).not.toBe("failed")
  }, 120_000)

  it("fails with the spec's error body as GatewayError, and a failed task as TaskFailed", async () => {
    const notFound = await rejection(client.getTask("video", "task_missing"))
    expect(notFound).toBeInstanceOf(GatewayError)
    expect(notFound).toMatchObject({ status: 404, type: "not_found_error", code: "task_not_found" })
    expect((notFound as GatewayError).request_id).toMatch(/^req_/)

    const badDuration = await rejection(client.createVideoTask({
      model: "provy-famS-2.0-480p",
      operation: "generation",
      input: { prompt: "p" },
      output: { duration: 99 }
    }))
    expect(badDuration).toMatchObject({ _tag: "GatewayError", status: 400, code: "invalid_video_duration" })

    const noToken = createClient({ baseUrl: gw.url, resourceKey: keys.resourceKey })
    expect(
      await rejection(noToken.createVideoTask({
        model: "provy-famS-2.0-480p",
        operation: "generation",
        input: { prompt: "p" },
        output: { duration: 4 }
      }))
    ).toMatchObject({ status: 401, type: "authentication_error", code: "invalid_api_key" })
    await noToken.close()

    const failing = await Effect.runPromise(
      Effect.gen(function*() {
        const { task, retryAfter } = yield* createVideoTask({
          model: "provy-famS-2.0-480p",
          operation: "generation",
          input: { prompt: "p" },
          output: { duration: 4 },
          provider_options: { sandbox: { outcome: "fail" } }
        })
        return yield* Effect.flip(waitForTask("video", task.id, { retryAfter }))
      }).pipe(
        Effect.provide(GatewayClient.layer({ baseUrl: gw.url, ...keys }).pipe(Layer.provideMerge(NodeClientLive)))
      )
    )
    expect(failing).toBeInstanceOf(TaskFailed)
    expect(failing).toMatchObject({ kind: "video", code: "video_task_failed", retryable: false })
  }, 120_000)

  it("downloads a url_auth resource_api_key result with the key only; the HttpApiClient is usable as is", async () => {
    const { task, retryAfter } = await slowTask(0)
    const done = await client.waitForTask("video", task.id, { retryAfter })
    const item = done.result!.videos[0]!
    expect(item.url_auth).toBe("resource_api_key")
    const [file] = await client.downloadTaskResults(done, join(dir, "keyed"))
    expect(readFileSync(file!).length).toBe((await client.getAsset(item.asset_id)).size_bytes)

    const keyless = createClient({ baseUrl: gw.url })
    expect(await rejection(keyless.downloadResult(item, join(dir, "keyless")))).toMatchObject({
      status: 401,
      code: "invalid_api_key"
    })
    await keyless.close()

    const page = await Effect.runPromise(
      Effect.flatMap(
        GatewayClient,
        (c) => c.resource.taskRead.listVideoTasks({ urlParams: { status: "succeeded", limit: 1 } })
      ).pipe(
        Effect.provide(GatewayClient.layer({ baseUrl: gw.url, ...keys }).pipe(Layer.provideMerge(NodeClientLive)))
      )
    )
    expect(page.data).toHaveLength(1)
    expect(page.data[0]!.status).toBe("succeeded")
  }, 120_000)
})
