import { Context, Effect } from "effect"

/** One of the process's output streams, as far as the CLI needs it. */
export interface TerminalStream {
  /** Whether it is a terminal (then a progress bar is drawn and colours are kept). */
  readonly isTTY: boolean
  /** Its width in columns, when it is a terminal that says. */
  readonly columns: () => number | undefined
  readonly write: (text: string) => void
}

/**
 * Where `mtg` writes progress and whether its outputs are terminals: given
 * by the entry point (src/cli/main.ts, from Node's process), so the
 * commands themselves use no Node global.
 */
export class Terminal extends Context.Tag("Terminal")<Terminal, {
  readonly stdout: TerminalStream
  readonly stderr: TerminalStream
}>() {}

/** Neither stream a terminal, writes dropped: for running commands where no terminal is given. */
export const NO_TERMINAL: Context.Tag.Service<Terminal> = {
  stdout: { isTTY: false, columns: () => undefined, write: () => {} },
  stderr: { isTTY: false, columns: () => undefined, write: () => {} }
}

export const terminal = Effect.serviceOption(Terminal).pipe(
  Effect.map((t) => t._tag === "Some" ? t.value : NO_TERMINAL)
)
