import { Deferred, Effect, Exit, Fiber, Layer } from "effect"
import {
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync
} from "node:fs"
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
} from "../../src/client/index.ts"
import { createAccount } from "../support/adminApi.ts"
import { docExample, mtgEnv, run } from "../support/cli.ts"
import { configWith } from "../support/config.ts"
import { backend } from "../support/database.ts"
import { startGateway, type TestGateway } from "../support/gateway.ts"
import { probeBytes } from "../support/media.ts"
import { makeImage } from "../support/uploads.ts"

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
  it(
    "as a package: a project that ran `npm install <the clone>` runs docs/client.md's promise example with plain node, and type-checks (nodenext, bundler) and runs its Effect example",
    async () => {
      const app = join(dir, "app")
      mkdirSync(app)
      writeFileSync(join(app, "package.json"), JSON.stringify({ name: "client-app", private: true, type: "module" }))
      // As a user installs a clone: npm links the directory (offline: nothing else is fetched; the clone is built).
      const installed = await run(
        "npm",
        ["install", resolve("."), "--offline", "--ignore-scripts", "--no-audit", "--no-fund"],
        { cwd: app }
      )
      expect(installed.code, installed.stderr).toBe(0)
      expect(lstatSync(join(app, "node_modules", "media-task-gateway")).isSymbolicLink()).toBe(true)
      writeFileSync(join(app, "boat.png"), readFileSync(join(dir, "boat.png")))
      const env = mtgEnv(gw.url, { model: { key: keys.modelToken }, resource: { key: keys.resourceKey } })

      // The promise example: JavaScript, run by node itself (no tsx, no loader).
      writeFileSync(join(app, "example.mjs"), docExample("docs/client.md", "client"))
      const result = await run(process.execPath, ["example.mjs"], { env, cwd: app })
      expect(result.code, result.stderr).toBe(0)
      expect(result.stdout).toMatch(/^succeeded 100$/m)
      const [file] = readdirSync(join(app, "results"))
      expect(result.stdout).toContain(join("results", file!))
      // A result behind the resource key, fetched with it.
      expect((await probeBytes(readFileSync(join(app, "results", file!)))).video?.codec).toBe("h264")

      // The Effect example, with the project's own `effect` and @types/node: links to the clone's
      // copies stand in for `npm install effect @types/node` (one copy of effect, as npm dedupes it).
      mkdirSync(join(app, "node_modules", "@types"))
      symlinkSync(resolve("node_modules/effect"), join(app, "node_modules", "effect"))
      symlinkSync(resolve("node_modules/@types/node"), join(app, "node_modules", "@types", "node"))
      writeFileSync(join(app, "effect-example.ts"), docExample("docs/client.md", "client-effect"))
      // Types that resolve to nothing would pass as `any`: this must not type-check.
      writeFileSync(
        join(app, "wrong.ts"),
        `import { createClient } from "media-task-gateway/client"\n` +
          `export const status: "nope" = (await createClient({ baseUrl: "" }).getTask("video", "t")).task.status\n`
      )
      const tsconfig = (name: string, options: Record<string, unknown>, files: Array<string>) =>
        writeFileSync(
          join(app, name),
          JSON.stringify({
            compilerOptions: {
              strict: true,
              target: "ES2022",
              lib: ["ES2022", "DOM"],
              types: ["node"],
              skipLibCheck: false,
              ...options
            },
            files
          })
        )
      tsconfig("tsconfig.json", { module: "nodenext", moduleResolution: "nodenext", outDir: "build" }, [
        "effect-example.ts"
      ])
      tsconfig("tsconfig.bundler.json", { module: "esnext", moduleResolution: "bundler", noEmit: true }, [
        "effect-example.ts",
        "wrong.ts"
      ])
      const tsc = (...args: Array<string>) =>
        run(process.execPath, [resolve("node_modules/typescript/bin/tsc"), ...args], { cwd: app })
      const [nodenext, bundler] = await Promise.all([tsc("-p", "tsconfig.json"), tsc("-p", "tsconfig.bundler.json")])
      expect(nodenext.code, nodenext.stdout).toBe(0)
      // The example type-checks under both; the one error is wrong.ts's.
      const errors = bundler.stdout.split("\n").filter((line) => /^\S+\(\d+,\d+\): error /.test(line))
      expect(errors).toEqual([expect.stringMatching(/^wrong\.ts\(2,\d+\): error TS2322: .*'"nope"'/)])
      const effect = await run(process.execPath, ["build/effect-example.js"], { env, cwd: app })
      expect(effect.code, effect.stderr).toBe(0)
      const [, id, files] = /^(task_\w+) succeeded (.+)$/m.exec(effect.stdout)!
      expect(id).toMatch(/^task_/)
      const [mp4] = readdirSync(join(app, "lighthouse"))
      expect(files).toBe(join("lighthouse", mp4!))
      expect((await probeBytes(readFileSync(join(app, "lighthouse", mp4!)))).video?.codec).toBe("h264")
    },
    240_000
  )

  it("the package's client imports effect and @effect/* from node_modules instead of carrying a copy", () => {
    const compiled = readFileSync("dist/client/index.js", "utf8")
    const imported = new Set([...compiled.matchAll(/^import .* from "([^"]+)";$/gm)].map((m) => m[1]!))
    expect([...imported].filter((p) => p === "effect" || p.startsWith("@effect/")).sort()).toEqual([
      "@effect/platform",
      "@effect/platform-node",
      "effect"
    ])
    // esbuild marks every bundled file with a path comment: none comes from node_modules.
    expect(compiled).toMatch(/^\/\/ src\/client\/Promise\.ts$/m)
    expect(compiled).not.toMatch(/^\/\/ node_modules\//m)
    const pkg = JSON.parse(readFileSync("package.json", "utf8"))
    expect(Object.keys(pkg.exports["./client"])).toEqual(["types", "default"])
    expect(readFileSync(pkg.exports["./client"].types, "utf8")).toContain("export { type CallOptions, createClient")
  })

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
