import { spawn } from "node:child_process"
import { createServer } from "node:net"
import os from "node:os"
import { dirname, join, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import pg from "pg"

/** What every benchmark script shares: paths, ports, databases, statistics and the machine it ran on. */

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..")
export const RESULTS_DIR = join(ROOT, "bench", "results")
export const RESULTS_MD = join(ROOT, "bench", "RESULTS.md")

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

export const gitHead = () =>
  new Promise<string | null>((ok) => {
    const git = spawn("git", ["rev-parse", "HEAD"], { cwd: ROOT, stdio: ["ignore", "pipe", "ignore"] })
    let out = ""
    git.stdout.on("data", (d) => (out += d))
    git.on("error", () => ok(null))
    git.on("close", (code) => ok(code === 0 ? out.trim() : null))
  })
