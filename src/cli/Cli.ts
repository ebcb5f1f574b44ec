import { Command, Options, ValidationError } from "@effect/cli"
import { Cause, Console, Effect, Exit, Predicate } from "effect"
import pkg from "../../package.json" with { type: "json" }
import { common } from "./Common.ts"
import { commandAt, describeCommand, describeOptions, type FlagHelp, type HelpContext, renderHelp } from "./Help.ts"
import { image } from "./ImageCommand.ts"
import { assets, models, upload } from "./ResourceCommands.ts"
import { tasks } from "./TasksCommand.ts"
import { video } from "./VideoCommand.ts"

/** Exit codes (docs/cli.md). */
export const EXIT = { ok: 0, taskFailed: 1, usage: 2, api: 3 } as const

const root = Command.make("mtg").pipe(
  Command.withDescription("Command-line client of the media task gateway."),
  Command.withSubcommands([video, image, tasks, models, upload, assets])
)

const cli = Command.run(root, { name: "mtg", version: pkg.version })

const builtIn = (names: Array<string>, value: string | undefined, description: string): FlagHelp => ({
  names,
  value,
  optional: true,
  repeated: false,
  defaultValue: undefined,
  description
})

/** What `--help` shows besides the commands: @effect/cli's built-in flags that are of use here, and the root's footer. */
export const helpContext: HelpContext = {
  common: describeOptions(Options.all(common)),
  builtIn: [
    builtIn(["-h", "--help"], undefined, "Show this help; after a command, that command's."),
    builtIn(["--version"], undefined, "Print mtg's version."),
    builtIn(["--completions"], "sh|bash|fish|zsh", "Print a completion script for this shell.")
  ],
  footer: [
    "Exit codes: 0 success, 1 the task failed, 2 a usage error (an unknown or malformed flag, a missing key, a local file that is missing or of the wrong kind), 3 an API or network error, or --timeout reached.",
    "Documentation: docs/cli.md."
  ],
  version: pkg.version
}

/** Every command and flag as help shows them. */
export const commandHelp = describeCommand(root)

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

/**
 * Runs the command line (`argv` as `process.argv` gives it) and answers the
 * exit code; failures are printed on stderr. `--help` (or `-h`), a bare
 * `mtg` and a group without its command (`mtg tasks`) print help rendered
 * from the command definitions (Help.ts); everything else is @effect/cli's.
 */
export const runCli = (argv: ReadonlyArray<string>) =>
  Effect.suspend(() => {
    const args = argv.slice(2)
    const dashes = args.indexOf("--")
    const flags = dashes < 0 ? args : args.slice(0, dashes)
    const at = commandAt(commandHelp, args)
    if (args.length === 0 || flags.some((a) => a === "--help" || a === "-h")) {
      return Effect.as(Console.log(renderHelp(at, helpContext)), EXIT.ok as number)
    }
    // `mtg tasks` alone; `mtg --version` and `mtg --completions bash` are @effect/cli's.
    const named = flags.filter((a) => !a.startsWith("-")).length
    if (at.path.length > 1 && at.subcommands.length > 0 && named === at.path.length - 1) {
      return Effect.as(
        Console.error(`${renderHelp(at, helpContext)}\n\nerror: ${at.path.join(" ")} needs a command.`),
        EXIT.usage as number
      )
    }
    return Effect.flatMap(Effect.exit(cli(argv)), (exit) => {
      if (Exit.isSuccess(exit)) return Effect.succeed(EXIT.ok as number)
      const failure = Cause.failureOption(exit.cause)
      const { code, line } = failure._tag === "Some"
        ? describeFailure(failure.value)
        : { code: EXIT.api, line: `error: ${Cause.pretty(exit.cause)}` }
      // @effect/cli has said what is wrong; where to read how it is right:
      const hint = failure._tag === "Some" && ValidationError.isValidationError(failure.value)
        ? `Run \`${at.path.join(" ")} --help\` for its usage.`
        : undefined
      return Effect.as(line === undefined && hint === undefined ? Effect.void : Console.error(line ?? hint), code)
    })
  })
