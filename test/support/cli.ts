import { NodeContext } from "@effect/platform-node"
import { ConfigProvider, Console, Effect, Layer } from "effect"
import { spawn } from "node:child_process"
import { readFileSync } from "node:fs"
import { resolve } from "node:path"
import { runCli } from "../../src/cli/Cli.ts"
import { NodeClientLive } from "../../src/runtime/node/NodeClient.ts"

/** The repository's `mtg` launcher, as `npx mtg` runs it from a clone. */
export const MTG = resolve("bin/mtg.mjs")

export interface Run {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/** Runs a program to its end, with only the given environment on top of PATH and HOME (no stray MTG_* of the caller). */
export const run = (
  command: string,
  args: ReadonlyArray<string>,
  options: { readonly env?: Record<string, string>; readonly cwd?: string } = {}
): Promise<Run> =>
  new Promise((done, fail) => {
    const child = spawn(command, args, {
      cwd: options.cwd ?? process.cwd(),
      env: { PATH: process.env.PATH!, HOME: process.env.HOME ?? "/tmp", ...options.env },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (chunk) => (stdout += chunk))
    child.stderr.on("data", (chunk) => (stderr += chunk))
    child.on("error", fail)
    child.on("close", (code) => done({ code, stdout, stderr }))
  })

/** `mtg args…` as a process. */
export const mtg = (
  args: ReadonlyArray<string>,
  options: { readonly env?: Record<string, string>; readonly cwd?: string } = {}
) => run(process.execPath, [MTG, ...args], options)

/** `{ MTG_BASE_URL, MTG_MODEL_TOKEN, MTG_RESOURCE_KEY }` for an account of a started gateway. */
export const mtgEnv = (url: string, acct: { readonly model: { key: string }; readonly resource: { key: string } }) => ({
  MTG_BASE_URL: url,
  MTG_MODEL_TOKEN: acct.model.key,
  MTG_RESOURCE_KEY: acct.resource.key
})

/**
 * The fenced block of a docs page (`docs/cli.md`) that follows the comment
 * `<!-- example: name …`, so a test runs exactly what the page shows.
 */
export const docExample = (file: string, name: string): string => {
  const page = readFileSync(file, "utf8")
  const at = page.indexOf(`<!-- example: ${name} `)
  if (at < 0) throw new Error(`${file} has no example "${name}"`)
  const block = /```\w*\n([\s\S]*?)```/.exec(page.slice(at))
  if (block === null) throw new Error(`${file} example "${name}" has no code block`)
  return block[1]!
}

/** The `npx mtg …` commands of a shell example, continuation lines joined. */
export const mtgCommands = (block: string): Array<string> =>
  block.replace(/\\\n\s*/g, " ").split("\n").map((line) => line.trim()).filter((line) => line.startsWith("npx mtg "))

/**
 * The same command line run inside the test's process (`runCli`, what
 * bin/mtg.mjs runs): the exit code and what was printed, with `env` as the
 * only environment the options fall back to. Much cheaper than a process,
 * for checks that need no terminal and no exit status.
 */
export const mtgInProcess = async (args: ReadonlyArray<string>, env: Record<string, string> = {}): Promise<Run> => {
  let stdout = ""
  let stderr = ""
  // Colour codes dropped, as a pipe would see the output.
  const text = (args: ReadonlyArray<unknown>) => `${args.map(String).join(" ").replace(/\x1b\[[0-9;]*m/g, "")}\n`
  const base = await Effect.runPromise(Console.consoleWith(Effect.succeed))
  const capture: typeof base = {
    ...base,
    log: (...a) => Effect.sync(() => void (stdout += text(a))),
    error: (...a) => Effect.sync(() => void (stderr += text(a)))
  }
  const code = await Effect.runPromise(
    runCli(["node", "mtg", ...args]).pipe(
      Console.withConsole(capture),
      Effect.provide(
        Layer.mergeAll(
          NodeContext.layer,
          NodeClientLive,
          Layer.setConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env))))
        )
      )
    )
  )
  return { code, stdout, stderr }
}
