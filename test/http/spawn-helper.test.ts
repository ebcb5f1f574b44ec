// Runs once: no database (left out of the PostgreSQL pass, vitest.config.ts).
import { Command, CommandExecutor } from "@effect/platform"
import { NodeContext } from "@effect/platform-node"
import ffprobe from "@ffprobe-installer/ffprobe"
import { Chunk, Effect, Exit, Layer, ManagedRuntime, Stream } from "effect"
import { spawn } from "node:child_process"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { ffprobeArgs } from "../../src/media/Ffprobe.ts"
import { runTool } from "../../src/platform/ToolProcess.ts"
import { SpawnHelperLive } from "../../src/runtime/node/SpawnHelper.ts"
import { movie } from "../fakes/media.ts"
import { eventually } from "../support/eventually.ts"

/**
 * The Node runtime's CommandExecutor starts children from a helper process
 * (src/runtime/node/SpawnHelper.ts). What the service relies on must hold
 * through it exactly as through the platform's executor: output, exit
 * codes, signals, stdin, kills at the end of a scope, back-pressure; and no
 * child outlives the service, even one killed with SIGKILL.
 */

const helperRuntime = ManagedRuntime.make(SpawnHelperLive.pipe(Layer.provide(NodeContext.layer)))
const platformRuntime = ManagedRuntime.make(NodeContext.layer)
afterAll(() => Promise.all([helperRuntime.dispose(), platformRuntime.dispose()]))

const node = (source: string) => Command.make(process.execPath, "-e", source)
const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

describe("the spawn helper's CommandExecutor", { timeout: 60_000 }, () => {
  it("runs ffprobe on a real MP4 with the same report as the platform's executor, from a child of the helper", async () => {
    const file = join(mkdtempSync(join(tmpdir(), "spawn-helper-")), "a.mp4")
    writeFileSync(file, await movie("160x120", "1"))
    const probe = runTool(Command.make(ffprobe.path, ...ffprobeArgs(file, ["mov", "mp4"])), { timeout: "20 seconds" })
    const [viaHelper, viaPlatform] = await Promise.all([
      helperRuntime.runPromise(probe),
      platformRuntime.runPromise(probe)
    ])
    expect(viaHelper.exitCode).toBe(0)
    expect(JSON.parse(viaHelper.stdout).streams.map((s: any) => s.codec_name)).toEqual(["h264", "aac"])
    expect(viaHelper).toEqual(viaPlatform)

    // The child's parent is the helper, not this process.
    const parent = await helperRuntime.runPromise(runTool(node("console.log(process.ppid)"), { timeout: "20 seconds" }))
    expect(Number(parent.stdout)).not.toBe(process.pid)
    expect(alive(Number(parent.stdout))).toBe(true)
  })

  it("reports exit codes, stderr, a missing executable, and a death by signal", async () => {
    const failed = await helperRuntime.runPromise(
      runTool(node("process.stderr.write('bad input'); process.exit(3)"), { timeout: "20 seconds" })
    )
    expect(failed).toEqual({ exitCode: 3, stdout: "", stderr: "bad input" })

    const missing = await helperRuntime.runPromise(
      Effect.flip(runTool(Command.make("/nonexistent/ffprobe", "-version"), { timeout: "20 seconds" }))
    )
    expect(missing.reason).toBe("spawn")

    const signalled = await helperRuntime.runPromise(
      Effect.flip(runTool(node("process.kill(process.pid, 'SIGKILL')"), { timeout: "20 seconds" }))
    )
    expect(signalled.reason).toBe("signal")
    expect(signalled.message).toContain("SIGKILL")
  })

  it("pipes stdin to the child and carries 8 MB of output whole through its flow-control window", async () => {
    const echoed = await helperRuntime.runPromise(Effect.scoped(Effect.gen(function*() {
      const executor = yield* CommandExecutor.CommandExecutor
      const proc = yield* executor.start(node("process.stdin.pipe(process.stdout)"))
      const input = ["first ", "second ", "third"].map((s) => new TextEncoder().encode(s))
      const [out] = yield* Effect.all([
        proc.stdout.pipe(Stream.decodeText(), Stream.mkString),
        Stream.run(Stream.fromIterable(input), proc.stdin)
      ], { concurrency: "unbounded" })
      return { out, code: yield* proc.exitCode }
    })))
    expect(echoed).toEqual({ out: "first second third", code: 0 })

    // Writing to a process that has exited fails at once instead of waiting for an answer.
    const late = await helperRuntime.runPromise(Effect.scoped(Effect.gen(function*() {
      const executor = yield* CommandExecutor.CommandExecutor
      const proc = yield* executor.start(node("process.exit(0)"))
      yield* proc.exitCode
      return yield* Stream.run(Stream.make(new Uint8Array([1, 2, 3])), proc.stdin).pipe(
        Effect.timeout("5 seconds"),
        Effect.flip
      )
    })))
    expect(late._tag).toBe("SystemError")
    expect(late.message).toContain("the process has exited")

    const big = await helperRuntime.runPromise(Effect.scoped(Effect.gen(function*() {
      const executor = yield* CommandExecutor.CommandExecutor
      const proc = yield* executor.start(
        node("for (let i = 0; i < 128; i++) process.stdout.write(Buffer.alloc(65536, i))")
      )
      const chunks = yield* Stream.runCollect(proc.stdout)
      return { bytes: Buffer.concat(Chunk.toArray(chunks)), code: yield* proc.exitCode }
    })))
    expect(big.code).toBe(0)
    expect(big.bytes.length).toBe(128 * 65536)
    for (let i = 0; i < 128; i++) expect(big.bytes[i * 65536 + 65535]).toBe(i)
  })

  it("a consumer that stops reading stops the child instead of filling memory", async () => {
    const written = join(mkdtempSync(join(tmpdir(), "spawn-helper-")), "progress")
    await helperRuntime.runPromise(Effect.scoped(Effect.gen(function*() {
      const executor = yield* CommandExecutor.CommandExecutor
      // Writes 64 KiB pieces for as long as its writes are taken, noting how far it got.
      const proc = yield* executor.start(node(
        `const fs = require("fs"); let n = 0; const go = () => { while (process.stdout.write(Buffer.alloc(65536))) fs.writeFileSync(${
          JSON.stringify(written)
        }, String(++n)); process.stdout.once("drain", go) }; go()`
      ))
      yield* Effect.sleep("1500 millis")
      expect(yield* proc.isRunning).toBe(true)
      const { readFileSync } = yield* Effect.promise(() => import("node:fs"))
      const first = Number(readFileSync(written, "utf8"))
      yield* Effect.sleep("500 millis")
      // Stalled: the helper's window (1 MiB) and the pipes hold what nobody read, a few MB at most.
      expect(Number(readFileSync(written, "utf8"))).toBe(first)
      expect(first * 65536).toBeLessThan(8 * 1024 * 1024)
    })))
  })

  it("kills the child's process group when the scope closes early (a time-out)", async () => {
    const pids = join(mkdtempSync(join(tmpdir(), "spawn-helper-")), "pids")
    const result = await helperRuntime.runPromise(Effect.exit(runTool(
      node(`require("fs").writeFileSync(${JSON.stringify(pids)}, String(process.pid)); setInterval(() => {}, 1000)`),
      { timeout: "1500 millis" }
    )))
    expect(Exit.isFailure(result)).toBe(true)
    const { readFileSync } = await import("node:fs")
    const pid = Number(readFileSync(pids, "utf8"))
    await eventually(async () => (alive(pid) ? undefined : true), `child ${pid} gone`, { deadlineMs: 5_000 })
  })

  it("when the service dies by SIGKILL, the helper and its children go with it", async () => {
    const parent = spawn(process.execPath, ["--import", "tsx", "test/support/spawnHelperParent.ts"], {
      stdio: ["ignore", "pipe", "inherit"]
    })
    const line = await new Promise<string>((resolve, reject) => {
      let text = ""
      parent.stdout!.on("data", (d) => {
        text += d
        if (text.includes("\n")) resolve(text.trim())
      })
      parent.on("exit", () => reject(new Error(`the parent exited first: ${text}`)))
    })
    const { helper, child } = JSON.parse(line) as { helper: number; child: number }
    expect(alive(helper) && alive(child)).toBe(true)
    expect(helper).not.toBe(parent.pid)
    parent.kill("SIGKILL")
    await eventually(async () => (alive(helper) || alive(child) ? undefined : true), "helper and child gone", {
      deadlineMs: 10_000
    })
  })
})
