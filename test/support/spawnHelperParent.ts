import { Command, CommandExecutor } from "@effect/platform"
import { NodeContext } from "@effect/platform-node"
import { Effect, Layer, Stream } from "effect"
import { SpawnHelperLive } from "../../src/runtime/node/SpawnHelper.ts"

/**
 * A stand-in for the service in test/http/spawn-helper.test.ts: starts a
 * long-running child through the spawn helper, prints
 * `{"helper": pid, "child": pid}` and waits to be killed.
 */
const program = Effect.scoped(Effect.gen(function*() {
  const executor = yield* CommandExecutor.CommandExecutor
  const proc = yield* executor.start(
    Command.make(process.execPath, "-e", "console.log(process.ppid); setInterval(() => {}, 1000)")
  )
  const helper = yield* proc.stdout.pipe(Stream.decodeText(), Stream.splitLines, Stream.runHead)
  console.log(JSON.stringify({ helper: Number(helper._tag === "Some" ? helper.value : 0), child: proc.pid }))
  yield* Effect.never
}))

Effect.runFork(program.pipe(Effect.provide(SpawnHelperLive.pipe(Layer.provide(NodeContext.layer)))))
