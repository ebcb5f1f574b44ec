import { Console, Effect } from "effect"
import { terminal } from "./Terminal.ts"

const ANSI = /\x1b\[[0-9;]*m/g

const plain = (args: ReadonlyArray<unknown>) => args.map((a) => (typeof a === "string" ? a.replace(ANSI, "") : a))

/**
 * @effect/cli colours its help and messages whatever the output is; this
 * drops the colour codes from what goes to a stream that is not a terminal,
 * so piped help and errors read as plain text.
 */
export const withPlainConsole = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.flatMap(terminal, ({ stderr, stdout }) =>
    Console.consoleWith((base) =>
      Console.withConsole(effect, {
        ...base,
        log: (...args) => base.log(...(stdout.isTTY ? args : plain(args))),
        error: (...args) => base.error(...(stderr.isTTY ? args : plain(args)))
      })
    ))
