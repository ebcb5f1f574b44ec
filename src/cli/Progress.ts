import { Effect } from "effect"
import { terminal, type TerminalStream } from "./Terminal.ts"

/**
 * Progress shown while files upload and while a task runs. On a terminal
 * (stdout is a TTY) one bar is redrawn in place on stdout; otherwise each
 * change is a plain line on stderr, so stdout keeps only the results (and
 * `--json` output stays one JSON document).
 */
export interface Progress {
  /** `percent` 0 to 100; `label` says what is moving (a file name, a task's status). */
  readonly update: (percent: number, label: string) => void
  /** Ends the display: the bar's line is finished so later output starts on its own line. */
  readonly done: () => void
}

const WIDTH = 30

/** `[##########--------------------]  33% label`, cut to the terminal's width. */
export const renderBar = (percent: number, label: string, columns = 80) => {
  const clamped = Math.max(0, Math.min(100, Math.round(percent)))
  const filled = Math.round((clamped / 100) * WIDTH)
  const line = `[${"#".repeat(filled)}${"-".repeat(WIDTH - filled)}] ${String(clamped).padStart(3)}% ${label}`
  return line.slice(0, Math.max(10, columns - 1))
}

const bar = (stream: TerminalStream): Progress => {
  let last = ""
  let drawn = false
  return {
    update: (percent, label) => {
      const line = renderBar(percent, label, stream.columns())
      if (line === last) return
      last = line
      drawn = true
      // Back to the line's start and clear it, then draw: the bar moves in place.
      stream.write(`\r\x1b[2K${line}`)
    },
    done: () => {
      if (drawn) stream.write("\n")
      drawn = false
      last = ""
    }
  }
}

/** Plain lines, one per whole step of `step` percent or change of label, so a big upload prints a bounded number. */
const lines = (stream: TerminalStream, step: number): Progress => {
  let last = ""
  return {
    update: (percent, label) => {
      const shown = Math.floor(Math.max(0, Math.min(100, percent)) / step) * step
      const line = `${label} ${shown}%`
      if (line === last) return
      last = line
      stream.write(`${line}\n`)
    },
    done: () => {
      last = ""
    }
  }
}

/** The display for this process: a bar when stdout is a terminal and output is not `--json`. */
export const makeProgress = (options: { readonly json: boolean; readonly step?: number }) =>
  Effect.map(
    terminal,
    ({ stderr, stdout }): Progress => stdout.isTTY && !options.json ? bar(stdout) : lines(stderr, options.step ?? 1)
  )
