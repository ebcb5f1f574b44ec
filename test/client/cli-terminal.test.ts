import { execFileSync } from "node:child_process"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createAccount } from "../support/adminApi.ts"
import { MTG, mtgEnv } from "../support/cli.ts"
import { configWith } from "../support/config.ts"
import { backend } from "../support/database.ts"
import { eventually } from "../support/eventually.ts"
import { startGateway, type TestGateway } from "../support/gateway.ts"

/**
 * `mtg` in a real terminal: tmux gives it a pseudo-terminal, so stdout is a
 * TTY and the CLI draws its progress bar. A sandbox delay makes the task slow
 * enough for the bar to be seen at several values while the gateway's
 * `Retry-After` (1 s here) paces the polls.
 */

const TMUX = "/usr/bin/tmux"
const socket = `mtg-test-${process.pid}`
let gw: TestGateway
let env: Record<string, string>

beforeAll(async () => {
  const config = configWith("limits.json", (limits) => {
    limits.poll_interval_s = 1
    limits.engine = { poll_interval_ms: 200 }
  })
  gw = await startGateway({ ROLE: "all", CONFIG_DIR: config })
  env = mtgEnv(gw.url, await createAccount(gw, { name: "tty", wallet_credits: 100 }))
})
afterAll(async () => {
  try {
    execFileSync(TMUX, ["-L", socket, "kill-server"], { stdio: "ignore" })
  } catch {
    // The server had already gone.
  }
  await gw?.close()
})

const tmux = (...args: Array<string>) => execFileSync(TMUX, ["-L", socket, ...args], { encoding: "utf8" })
const quote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`
const BAR = /\[([#-]{30})\]\s+(\d+)% (task_\w+) (\w+)/g

describe(`mtg in a terminal (${backend})`, () => {
  it("draws a progress bar that moves in place while a slow task runs, and ends at 100%", async () => {
    const command = [
      process.execPath,
      MTG,
      "video",
      "create",
      "--model",
      "provy-famS-2.0-480p",
      "--prompt",
      "slow boat",
      "--duration",
      "4",
      "--no-audio",
      "--provider-options",
      "{\"sandbox\":{\"delay_ms\":8000}}",
      "--wait"
    ].map(quote).join(" ")
    tmux(
      "new-session",
      "-d",
      "-x",
      "160",
      "-y",
      "24",
      ...Object.entries(env).flatMap(([k, v]) => ["-e", `${k}=${v}`]),
      `${command}; echo EXIT=$?; sleep 600`
    )
    const seen: Array<number> = []
    let screen = ""
    // Every look at the pane is a sample of the bar, until the command has exited.
    await eventually(
      () => {
        screen = tmux("capture-pane", "-p")
        for (const match of screen.matchAll(BAR)) {
          const percent = Number(match[2])
          if (seen.at(-1) !== percent) seen.push(percent)
        }
        return /EXIT=\d+/.test(screen)
      },
      "the command exits",
      { deadlineMs: 180_000, intervalMs: 200 }
    ).catch(() => undefined)
    expect(screen).toContain("EXIT=0")
    // The bar was seen at several values, never going back, and finished at 100%.
    expect(new Set(seen).size).toBeGreaterThanOrEqual(3)
    expect([...seen].sort((a, b) => a - b)).toEqual(seen)
    expect(seen.at(-1)).toBe(100)
    // Redrawn in place: the finished screen holds one bar line, the task's last state.
    const bars = [...screen.matchAll(BAR)]
    expect(bars).toHaveLength(1)
    expect(bars[0]![4]).toBe("succeeded")
  }, 240_000)
})
