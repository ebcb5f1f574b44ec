import { type Command, CommandExecutor } from "@effect/platform"
import { Data, Duration, Effect, Stream } from "effect"

export class ToolError extends Data.TaggedError("ToolError")<{
  readonly reason: "spawn" | "timeout" | "signal" | "output_limit" | "io"
  readonly message: string
}> {}

export interface ToolRun {
  readonly exitCode: number
  /** Empty when the caller consumed stdout line by line. */
  readonly stdout: string
  /** The last few kilobytes only: enough for a log line, bounded for a chatty tool. */
  readonly stderr: string
}

const STDERR_TAIL = 4_000
/** How long a tool gets to exit after SIGTERM before it gets SIGKILL. */
const KILL_GRACE = Duration.seconds(1)

/**
 * The platform's own release sends SIGTERM and then waits for the exit with
 * no limit, so a tool that ignores SIGTERM would hang the scope; this
 * finalizer runs first and escalates. Finalizers run uninterruptibly, and a
 * timeout cannot cut an uninterruptible wait: hence `interruptible`.
 */
const stop = (proc: CommandExecutor.Process) =>
  Effect.gen(function*() {
    if (!(yield* proc.isRunning)) return
    const killAndWait = (signal: "SIGTERM" | "SIGKILL") =>
      proc.kill(signal).pipe(Effect.interruptible, Effect.timeout(KILL_GRACE))
    yield* killAndWait("SIGTERM").pipe(Effect.catchAll(() => killAndWait("SIGKILL")))
  }).pipe(Effect.ignore)

/**
 * Runs a tool to completion, reading stdout and stderr concurrently so
 * neither pipe can fill and stall it. The process lives in this effect's
 * scope: a timeout or an interruption of the caller kills it.
 */
export const runTool = (
  command: Command.Command,
  options: {
    readonly timeout: Duration.DurationInput
    /** Called per stdout line; otherwise stdout is collected, up to `maxStdoutChars`. */
    readonly onStdoutLine?: (line: string) => Effect.Effect<void>
    readonly maxStdoutChars?: number
  }
): Effect.Effect<ToolRun, ToolError, CommandExecutor.CommandExecutor> =>
  Effect.scoped(Effect.gen(function*() {
    const executor = yield* CommandExecutor.CommandExecutor
    const proc = yield* executor.start(command).pipe(
      Effect.mapError((e) => new ToolError({ reason: "spawn", message: e.message }))
    )
    yield* Effect.addFinalizer(() => stop(proc))

    const io = (e: { readonly message: string }) => new ToolError({ reason: "io", message: e.message })
    const text = proc.stdout.pipe(Stream.decodeText(), Stream.mapError(io))
    const maxStdout = options.maxStdoutChars ?? 1_000_000
    const stdout = options.onStdoutLine
      ? text.pipe(Stream.splitLines, Stream.runForEach(options.onStdoutLine), Effect.as(""))
      : text.pipe(Stream.runFoldEffect("", (acc, chunk) =>
        acc.length + chunk.length > maxStdout
          ? Effect.fail(new ToolError({ reason: "output_limit", message: `stdout exceeded ${maxStdout} characters` }))
          : Effect.succeed(acc + chunk)))
    const stderr = proc.stderr.pipe(
      Stream.decodeText(),
      Stream.mapError(io),
      Stream.runFold("", (acc, chunk) => (acc + chunk).slice(-STDERR_TAIL))
    )
    const exitCode = proc.exitCode.pipe(
      Effect.mapError((e) => new ToolError({ reason: "signal", message: e.message }))
    )
    const [out, err, code] = yield* Effect.all([stdout, stderr, exitCode], { concurrency: "unbounded" })
    return { exitCode: code, stdout: out, stderr: err }
  })).pipe(
    Effect.timeoutFail({
      duration: options.timeout,
      onTimeout: () =>
        new ToolError({ reason: "timeout", message: `no exit within ${Duration.format(options.timeout)}` })
    })
  )
