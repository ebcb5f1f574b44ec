import { spawn } from "node:child_process"
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { createServer } from "node:net"
import os from "node:os"
import { dirname, join, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import pg from "pg"
import { sessionUrl } from "../src/runtime/node/PostgresClient.ts"
import { addRows } from "./markdown.ts"

/** What every benchmark script shares: paths, ports, databases, statistics and the machine it ran on. */

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..")
export const RESULTS_DIR = join(ROOT, "bench", "results")
export const RESULTS_MD = join(ROOT, "bench", "RESULTS.md")

/**
 * Records one run of benchmark `name`: its entry appended to
 * `bench/results/<name>-<date>.json` (the day's runs, in order) and its
 * table rows to the `## name` section of `bench/RESULTS.md` (made with
 * `header` the first time). The JSON file's path.
 */
export const recordRun = (
  name: string,
  date: string,
  entry: unknown,
  header: string,
  rows: ReadonlyArray<string>
) => {
  mkdirSync(RESULTS_DIR, { recursive: true })
  const file = join(RESULTS_DIR, `${name}-${date}.json`)
  const previous = existsSync(file) ? JSON.parse(readFileSync(file, "utf8")) : []
  writeFileSync(file, JSON.stringify([...previous, entry], null, 2) + "\n")
  writeFileSync(RESULTS_MD, addRows(readFileSync(RESULTS_MD, "utf8"), name, header, rows))
  return file
}

export const sleep = (ms: number) => new Promise<void>((ok) => setTimeout(ok, ms))

export const round = (n: number, digits = 1) => Number(n.toFixed(digits))

export const freePort = () =>
  new Promise<number>((ok, fail) => {
    const server = createServer()
    server.once("error", fail)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address ? address.port : 0
      server.close(() => ok(port))
    })
  })

/**
 * `url` with the session options the service's own connections use
 * (src/runtime/node/PostgresClient.ts: JIT off), so a statement a bench
 * times or explains on its own connection is planned as the service's is.
 */
export const asService = sessionUrl

export const withDatabase = (url: string, database: string) => {
  const u = new URL(url)
  u.pathname = `/${database}`
  return u.toString()
}

export const withClient = async <A>(url: string, f: (client: pg.Client) => Promise<A>): Promise<A> => {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    return await f(client)
  } finally {
    await client.end()
  }
}

/** Nearest-rank percentile of a sorted sample. */
export const percentile = (sorted: ArrayLike<number>, p: number) =>
  sorted.length === 0
    ? NaN
    : sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!

export const machine = () => {
  const cpus = os.cpus()
  return {
    cpu: cpus[0]?.model.trim() ?? "unknown",
    cores: cpus.length,
    memoryGiB: round(os.totalmem() / 1024 ** 3, 1),
    node: process.version,
    platform: `${os.platform()}-${os.arch()}`
  }
}

/** The machine as one table cell of bench/RESULTS.md. */
export const machineLine = () => {
  const m = machine()
  return `${m.cpu}, ${m.cores} cores, ${m.memoryGiB} GiB, node ${m.node}`
}

/** The commit checked out in `dir` (this checkout by default), or null outside a git work tree. */
export const gitHead = (dir = ROOT) =>
  new Promise<string | null>((ok) => {
    const git = spawn("git", ["rev-parse", "HEAD"], { cwd: dir, stdio: ["ignore", "pipe", "ignore"] })
    let out = ""
    git.stdout.on("data", (d) => (out += d))
    git.on("error", () => ok(null))
    git.on("close", (code) => ok(code === 0 ? out.trim() : null))
  })

/**
 * Runs pgbench (the server's own, on PATH) with `run` (the scripts and run
 * options: `-c`, `-T` or `-t`, `-f`, …) against `url`, with `-D` for each of
 * `defines`. Resolves with its transactions per second (excluding connection
 * time) and how many it retried; fails when pgbench does, or when any
 * transaction failed.
 */
export const runPgbench = (url: string, run: ReadonlyArray<string>, defines: Record<string, string>) =>
  new Promise<{ readonly tps: number; readonly retried: number }>((ok, fail) => {
    const u = new URL(url)
    const args = [
      "-n",
      ...run,
      ...["-h", u.hostname, "-p", u.port || "5432", "-U", decodeURIComponent(u.username || "postgres")],
      ...Object.entries(defines).flatMap(([k, v]) => ["-D", `${k}=${v}`]),
      u.pathname.slice(1)
    ]
    const child = spawn("pgbench", args, { stdio: ["ignore", "pipe", "pipe"] })
    let out = ""
    child.stdout.on("data", (d) => (out += d))
    child.stderr.on("data", (d) => (out += d))
    child.on("error", fail)
    child.on("close", (code) => {
      const tps = /tps = ([\d.]+) \(without initial connection time\)/.exec(out)
      const failed = /number of failed transactions: (\d+)/.exec(out)
      if (code !== 0 || !tps) return fail(new Error(`pgbench ${run.join(" ")} exited ${code}:\n${out}`))
      if (failed && Number(failed[1]) > 0) return fail(new Error(`pgbench: ${failed[1]} failed transactions\n${out}`))
      const retried = /number of transactions retried: (\d+)/.exec(out)
      ok({ tps: round(Number(tps[1]), 1), retried: retried ? Number(retried[1]) : 0 })
    })
  })
