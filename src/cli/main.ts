import { NodeContext } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import { NodeClientLive } from "../runtime/node/NodeClient.ts"
import { runCli } from "./Cli.ts"
import { withPlainConsole } from "./PlainConsole.ts"
import { Terminal, type TerminalStream } from "./Terminal.ts"

const streamOf = (stream: NodeJS.WriteStream): TerminalStream => ({
  isTTY: stream.isTTY === true,
  columns: () => stream.columns,
  write: (text) => void stream.write(text)
})

/**
 * Node entry point of `mtg` (bin/mtg.mjs runs it compiled: dist/src/cli/main.js). The exit code
 * is set rather than forced, so output still being written is not cut; a
 * handle left open cannot hold the process past a second.
 */
const code = await Effect.runPromise(
  runCli(process.argv).pipe(
    withPlainConsole,
    Effect.provide(Layer.mergeAll(NodeContext.layer, NodeClientLive)),
    Effect.provideService(Terminal, { stdout: streamOf(process.stdout), stderr: streamOf(process.stderr) })
  )
)
process.exitCode = code
setTimeout(() => process.exit(code), 1000).unref()
