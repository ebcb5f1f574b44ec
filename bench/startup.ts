/**
 * Benchmark: `npm start` to the first 200 from `/healthz`, and the service's
 * resident memory once started (the performance targets: under 1.5 s and
 * 150 MiB on an already migrated PostgreSQL; under 3 s and 300 MiB on a fresh
 * embedded PGlite).
 *
 *   npm run bench:startup
 *   BENCH_BEFORE=/tmp/before BENCH_BEFORE_LABEL=beff36e BENCH_ROUNDS=3 npm run bench:startup
 *
 * Each round starts the service once per command and database, in turn
 * (interleaved, so a change of machine load hits every variant):
 * - `npm start` in this checkout (what the README says: the compiled service);
 * - with `BENCH_BEFORE`, `npm start` in another checkout (e.g. an older
 *   commit, `git archive <commit> | tar -x -C dir` with node_modules linked),
 *   to compare before and after in one run.
 * Databases: PostgreSQL (`DATABASE_URL`, default the local `test` server; a
 * database made for the run, migrated by an untimed first start, its
 * DATA_DIR kept, as a restart finds it) and PGlite (a fresh DATA_DIR each
 * time, migrations included).
 *
 * Time: from spawn to the first 200 (polled every 20 ms). Memory: VmRSS from
 * /proc of the service's process (the largest of the process group npm
 * starts) 1 s after that 200; also its CPU time (utime + stime) up to the
 * 200, which moves less with the machine's load than the time does.
 * Appends to bench/RESULTS.md (`## startup`) and
 * bench/results/startup-<date>.json.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import * as os from "node:os"
import { join } from "node:path"
import { freePort, gitHead, machine, recordRun, ROOT, round, sleep, withClient, withDatabase } from "./support.ts"

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
const BEFORE = process.env.BENCH_BEFORE
const SERVER_URL = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test"
const ADMIN_TOKEN = "adm_bench_startup_0123456789abcdefghij"
const READY_TIMEOUT_MS = 120_000
const CLK_TCK = 100

const log = (message: string) => console.log(`[bench] ${message}`)

interface Variant {
  readonly name: string
  readonly cwd: string
}
type Database = "postgresql" | "pglite"

/** Every process of the process group `pgid`: pid, CPU ticks, VmRSS KiB. */
const group = (pgid: number) =>
  readdirSync("/proc").flatMap((entry) => {
    if (!/^\d+$/.test(entry)) return []
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8")
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
      if (Number(fields[2]) !== pgid) return []
      const rss = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${entry}/status`, "utf8"))
      return [{ pid: Number(entry), ticks: Number(fields[11]) + Number(fields[12]), rssKiB: Number(rss?.[1] ?? 0) }]
    } catch {
      return []
    }
  })

const launch = (variant: Variant, env: Record<string, string>, port: number) => {
  const clean = { ...process.env }
  for (const k of ["DATABASE_URL", "DATA_DIR", "ADMIN_TOKEN", "CONFIG_DIR", "ROLE", "PUBLIC_BASE_URL"]) delete clean[k]
  const child = spawn("npm", ["start", "--silent"], {
    cwd: variant.cwd,
    env: { ...clean, HOST: "127.0.0.1", PORT: String(port), ADMIN_TOKEN, ...env },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true
  })
  let tail = ""
  const keep = (chunk: Buffer) => (tail = (tail + chunk.toString()).slice(-4000))
  child.stdout!.on("data", keep)
  child.stderr!.on("data", keep)
  return { child, output: () => tail }
}

const stop = async (child: ChildProcess) => {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise((ok) => child.once("exit", ok))
  process.kill(-child.pid!, "SIGTERM")
  const done = await Promise.race([exited.then(() => true), sleep(20_000).then(() => false)])
  if (!done) process.kill(-child.pid!, "SIGKILL")
  await exited
}

interface Start {
  readonly ms: number
  readonly cpuMs: number
  readonly rssMiB: number
}

const startOnce = async (variant: Variant, env: Record<string, string>): Promise<Start> => {
  const port = await freePort()
  const began = performance.now()
  const { child, output } = launch(variant, env, port)
  try {
    const until = Date.now() + READY_TIMEOUT_MS
    for (;;) {
      if (child.exitCode !== null || Date.now() > until) throw new Error(`never healthy:\n${output()}`)
      const ok = await fetch(`http://127.0.0.1:${port}/healthz`).then((r) => r.status === 200, () => false)
      if (ok) break
      await sleep(20)
    }
    const ms = performance.now() - began
    const cpuMs = (group(child.pid!).reduce((n, p) => n + p.ticks, 0) * 1000) / CLK_TCK
    await sleep(1000)
    const service = group(child.pid!).reduce((a, b) => (b.rssKiB > a.rssKiB ? b : a))
    return { ms: Math.round(ms), cpuMs: Math.round(cpuMs), rssMiB: round(service.rssKiB / 1024, 1) }
  } finally {
    await stop(child)
  }
}

const median = (xs: ReadonlyArray<number>) => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2
}

const HEADER = `## startup

\`npm start\` to the first 200 from \`/healthz\` (spawn to 200, polled every 20 ms), the service
process's CPU time up to then (utime + stime from /proc, every process npm started), and its
resident memory (VmRSS of the largest process of the group) 1 s after. PostgreSQL: a database
made for the run and migrated by an untimed first start (its DATA_DIR kept, as a restart finds
it). PGlite: a fresh DATA_DIR each start (migrations included). Default ROLE (\`all\`: API and
engine), the repository's config/. Rounds interleave the commands and databases. Load is the
1-minute load average at start / end (2 shared cores: other work skews the times, less the CPU).

Run: \`npm run bench:startup\` (\`BENCH_ROUNDS\`, \`DATABASE_URL\` of the server; \`BENCH_BEFORE=dir\`
adds \`npm start\` in another checkout, e.g. an older commit, to the same run).

| Date | Machine | Commit | Command | Database | Spawn → 200 ms (each; median) | CPU ms (median) | RSS MiB (median) | Load start / end |
|---|---|---|---|---|---|---:|---:|---|
`

const main = async () => {
  const loadStart = os.loadavg()[0]!
  const commit = (await gitHead())?.slice(0, 7) ?? "unknown"
  const variants: Array<Variant> = [{ name: `npm start (${commit}: node dist/src/main.js)`, cwd: ROOT }]
  if (BEFORE) {
    const script = JSON.parse(readFileSync(join(BEFORE, "package.json"), "utf8")).scripts.start as string
    variants.push({ name: `npm start (${process.env.BENCH_BEFORE_LABEL ?? BEFORE}: ${script})`, cwd: BEFORE })
  }
  if (!existsSync(join(ROOT, "dist/src/main.js"))) throw new Error("dist/ is not built: npm run build")
  const scratch = mkdtempSync(join(os.tmpdir(), "bench-startup-"))
  const databases: Array<string> = []
  try {
    // PostgreSQL: one migrated database and DATA_DIR per command (each applies its own migrations).
    const pg = new Map<Variant, Record<string, string>>()
    for (const [i, variant] of variants.entries()) {
      const name = `bench_startup_${Date.now().toString(36)}_${i}`
      await withClient(SERVER_URL, (c) => c.query(`CREATE DATABASE ${name}`))
      databases.push(name)
      const dataDir = join(scratch, `pg-${i}`)
      mkdirSync(dataDir)
      const env = { DATABASE_URL: withDatabase(SERVER_URL, name), DATA_DIR: dataDir }
      pg.set(variant, env)
      await startOnce(variant, env)
      log(`migrated ${name} for ${variant.name}`)
    }
    const results = new Map<string, Array<Start>>()
    const key = (variant: Variant, db: Database) => `${variant.name}\u0000${db}`
    for (let r = 0; r < ROUNDS; r++) {
      for (const db of ["postgresql", "pglite"] as const) {
        for (const variant of variants) {
          const env = db === "postgresql" ? pg.get(variant)! : { DATA_DIR: mkdtempSync(join(scratch, "pglite-")) }
          const start = await startOnce(variant, env)
          if (db === "pglite") rmSync(env.DATA_DIR!, { recursive: true, force: true })
          results.set(key(variant, db), [...(results.get(key(variant, db)) ?? []), start])
          log(`round ${r + 1} ${db} ${variant.name}: ${JSON.stringify(start)}`)
        }
      }
    }
    const loadEnd = os.loadavg()[0]!
    const m = machine()
    const date = new Date().toISOString().slice(0, 10)
    const where = `${m.cpu.split(" ").slice(0, 2).join(" ")}, ${m.cores} cores, ${m.memoryGiB} GiB, node ${m.node}`
    const rows: Array<string> = []
    const entries: Array<unknown> = []
    for (const db of ["postgresql", "pglite"] as const) {
      for (const variant of variants) {
        const starts = results.get(key(variant, db))!
        const ms = median(starts.map((s) => s.ms))
        const cpuMs = median(starts.map((s) => s.cpuMs))
        const rssMiB = median(starts.map((s) => s.rssMiB))
        rows.push(
          `| ${date} | ${where} | ${commit} | ${variant.name} | ${
            db === "postgresql" ? "PostgreSQL, migrated" : "PGlite, fresh"
          } | ${starts.map((s) => s.ms).join(" / ")}; ${ms} | ${cpuMs} | ${rssMiB} | ${loadStart.toFixed(2)} / ${
            loadEnd.toFixed(2)
          } |`
        )
        entries.push({ variant: variant.name, database: db, starts, median: { ms, cpuMs, rssMiB } })
      }
    }
    const entry = {
      date: new Date().toISOString(),
      commit,
      machine: m,
      load: [loadStart, loadEnd],
      rounds: ROUNDS,
      entries
    }
    recordRun("startup", date, entry, HEADER, rows)
    for (const row of rows) log(row)
  } finally {
    for (const name of databases) {
      await withClient(SERVER_URL, (c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).catch(() => {})
    }
    rmSync(scratch, { recursive: true, force: true })
  }
}

main().catch((e) => {
  console.error(e)
  process.exit(1)
})
