import { Command, ValidationError } from "@effect/cli"
import { Cause, Console, Effect, Exit, Predicate } from "effect"
import pkg from "../../package.json" with { type: "json" }
import { image } from "./ImageCommand.ts"
import { assets, models, upload } from "./ResourceCommands.ts"
import { tasks } from "./TasksCommand.ts"
import { video } from "./VideoCommand.ts"

/** Exit codes (README, Command-line tool). */
export const EXIT = { ok: 0, taskFailed: 1, usage: 2, api: 3 } as const

const root = Command.make("mtg").pipe(
  Command.withDescription("Command-line client of the media task gateway."),
  Command.withSubcommands([video, image, tasks, models, upload, assets])
)

const cli = Command.run(root, { name: "mtg", version: pkg.version })

/** The line printed on stderr for a failure, and the exit code it means. */
export const describeFailure = (error: unknown): { readonly code: number; readonly line: string | undefined } => {
  // @effect/cli has printed its own message (with the usage) already.
  if (ValidationError.isValidationError(error)) return { code: EXIT.usage, line: undefined }
  if (!Predicate.hasProperty(error, "_tag")) return { code: EXIT.api, line: `error: ${String(error)}` }
  const e = error as any
  switch (e._tag) {
    case "UsageError":
      return { code: EXIT.usage, line: `error: ${e.message}` }
    case "LocalFileError":
      return { code: EXIT.usage, line: `error: ${e.path}: ${e.message}` }
    case "TaskFailed":
      return {
        code: EXIT.taskFailed,
        line: `error: ${e.code}: ${e.message} (task ${e.task_id} failed; retryable: ${e.retryable})`
      }
    case "GatewayError":
      return {
        code: EXIT.api,
        line: `error: ${e.code}: ${e.message} (HTTP ${e.status}${e.request_id ? `, request ${e.request_id}` : ""})`
      }
    case "NetworkError":
      return { code: EXIT.api, line: `error: network_error: ${e.message} (${e.url})` }
    case "WaitTimeout":
      return { code: EXIT.api, line: `error: wait_timeout: ${e.message}` }
    default:
      return { code: EXIT.api, line: `error: ${e.message ?? String(e)}` }
  }
}

/** Runs the command line (`argv` as `process.argv` gives it) and answers the exit code; failures are printed on stderr. */
export const runCli = (argv: ReadonlyArray<string>) =>
  Effect.flatMap(Effect.exit(cli(argv)), (exit) => {
    if (Exit.isSuccess(exit)) return Effect.succeed(EXIT.ok as number)
    const failure = Cause.failureOption(exit.cause)
    const { code, line } = failure._tag === "Some"
      ? describeFailure(failure.value)
      : { code: EXIT.api, line: `error: ${Cause.pretty(exit.cause)}` }
    return Effect.as(line === undefined ? Effect.void : Console.error(line), code)
  })
