// Runs once: no database. The commands' entry points, started as processes, answer without a gateway.
import { existsSync, mkdtempSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { describe, expect, it } from "vitest"
import { run } from "../support/cli.ts"
import { freePort } from "../support/gateway.ts"

/**
 * What `npx mtg` and the service's own command line (`node dist/src/main.js`,
 * `deno task start`) answer before they do anything: versions, help and
 * usage errors. The commands against a running gateway are in cli.test.ts.
 */

const json = (text: string) => JSON.parse(text)

describe("mtg from the clone", () => {
  it("npx mtg runs from the clone", async () => {
    const result = await run("npx", ["--no-install", "mtg", "--version"], { cwd: process.cwd() })
    expect(result.code, result.stderr).toBe(0)
    expect(result.stdout.trim()).toBe(json(readFileSync("package.json", "utf8")).version)
  }, 120_000)
})

describe("the service's own command line", () => {
  const variables = () => {
    // Every variable the service reads from the environment (AppConfig.ts) is in its --help.
    const source = readFileSync("src/platform/AppConfig.ts", "utf8")
    return [...source.matchAll(/Config\.\w+(?:\([^)]*\))?\("([A-Z0-9_]+)"\)/g)].map((m) => m[1]!)
  }

  it(
    "node dist/src/main.js: --help and --version answer without starting anything; an unknown argument exits 2",
    async () => {
      const dataDir = join(mkdtempSync(join(tmpdir(), "gw-args-")), "data")
      const env = { DATA_DIR: dataDir, PORT: String(await freePort()) }
      const main = (...args: Array<string>) => run(process.execPath, ["dist/src/main.js", ...args], { env })
      const [help, short, version, unknown] = await Promise.all([
        main("--help"),
        main("-h"),
        main("--version"),
        main("--port", "9000")
      ])
      expect(help.code).toBe(0)
      expect(help.stderr).toBe("")
      expect(help.stdout).toMatch(/^Usage: node dist\/src\/main\.js \[--help \| --version\]$/m)
      const named = variables()
      expect(named).toEqual(expect.arrayContaining(["HOST", "PORT", "DATA_DIR", "DATABASE_URL", "S3_BUCKET"]))
      for (const name of [...named, "FFMPEG_PATH", "FFPROBE_PATH"]) expect(help.stdout, name).toContain(name)
      expect(help.stdout).toMatch(/^ {2}DATA_DIR +.*\(\.\/data\)$/m)
      expect(help.stdout.split("\n").filter((line) => line.length > 100)).toEqual([])
      expect(short).toEqual(help)
      expect(version).toEqual({
        code: 0,
        stdout: `${json(readFileSync("package.json", "utf8")).version}\n`,
        stderr: ""
      })
      expect(unknown.code).toBe(2)
      expect(unknown.stdout).toBe("")
      expect(unknown.stderr).toMatch(/^error: unknown argument: --port\n\nUsage: node dist\/src\/main\.js/)
      // Nothing started: each process ended on its own, and no data directory was made.
      expect(existsSync(dataDir)).toBe(false)
    },
    60_000
  )

  it("deno task start's entry answers --help and --version the same way", async () => {
    const deno = (...args: Array<string>) =>
      run(resolve("node_modules/.bin/deno"), ["run", "--allow-all", "src/runtime/deno/main.ts", ...args])
    const [help, version, unknown] = await Promise.all([deno("--help"), deno("--version"), deno("--bogus")])
    expect(help.code, help.stderr).toBe(0)
    expect(help.stdout).toMatch(/^Usage: deno task start \[--help \| --version\]$/m)
    expect(help.stdout).toContain("DATABASE_URL")
    expect(version.stdout.trim()).toBe(json(readFileSync("package.json", "utf8")).version)
    expect(unknown.code).toBe(2)
    expect(unknown.stderr).toContain("error: unknown argument: --bogus")
  }, 120_000)
})
