/**
 * Benchmark, two checkouts side by side: the compiled gateway of another
 * checkout (`BEFORE`, a directory with its own `dist/`, e.g. a worktree of the
 * commit before a change) and of this one, both running at once on
 * PostgreSQL, each on a fresh database, driven in interleaved rounds
 * (before, after, before, …) of the read path (`GET /v1/video/tasks/{id}`, an
 * `ak_` key) and the create path (`POST /v1/video/tasks`, ROLE=api, 100
 * accounts). Running both at once and alternating every few seconds puts a
 * shared machine's changing load on both alike, which sequential runs of
 * bench/read-path.ts and bench/create-path.ts cannot. CPU per request is the
 * process's utime + stime (/proc) over its rounds divided by its responses.
 *
 *   npm run bench:ab                      # this work tree against the last release (the newest v* tag), or HEAD without one
 *   AGAINST=4f0dff9 npm run bench:ab      # … against a given commit: exported with git archive, built with this
 *                                         #   checkout's node_modules, removed after the run
 *   AGAINST=4f0dff9,9937a5e npm run bench:ab  # … against several at once, in the same interleaved rounds (a row each)
 *   BEFORE=/path/to/other/checkout DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npx tsx bench/checkouts-ab.ts
 *   ROUNDS=6 ROUND_S=4 …   # defaults
 *   PATHS=read …           # only the read rounds (or only `create`); both by default
 *   PROFILE=dir …          # each gateway runs with --cpu-prof into dir/before and dir/after
 *   BEFORE_COMMIT=4f0dff9 … # the before side's commit, when BEFORE is an export rather than a work tree
 *
 * Each run is appended to bench/RESULTS.md (checkouts-ab) and bench/results/.
 */
import { execFileSync, spawn } from "node:child_process"
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from "node:fs"
import * as os from "node:os"
import { join, resolve } from "node:path"
import buildIfStale from "../test/support/build.ts"
import {
  CLK_TCK,
  cpuTicks,
  gatewayInstallation,
  measureRound,
  type Round,
  type Server,
  stop,
  waitReady
} from "./servers.ts"
import { freePort, gitHead, machine, machineLine, recordRun, ROOT, withClient } from "./support.ts"

const ADMIN_TOKEN = "adm_bench_0123456789abcdefghijklmnop"
const ROUNDS = Number(process.env.ROUNDS ?? 6)
const ROUND_S = Number(process.env.ROUND_S ?? 4)
const CONNECTIONS = 10
const PATHS = (process.env.PATHS ?? "read,create").split(",").filter((p) => p === "read" || p === "create")
const PROFILE = process.env.PROFILE
const SPREAD = 100
const BODY = JSON.stringify({
  model: "provy-famS-2.0-480p",
  operation: "generation",
  input: { prompt: "a red fox running through snow" },
  output: { duration: 5 }
})

const log = (message: string) => console.log(`[checkouts-ab] ${message}`)

const HEADER = `## checkouts-ab

Two checkouts' compiled gateways (\`ROLE=api\`, PostgreSQL, a fresh database each) running at once,
driven in interleaved rounds whose order flips every round: \`GET /v1/video/tasks/{id}\` with an
\`ak_\` key and \`POST /v1/video/tasks\` over 100 accounts, autocannon with 10 connections
(\`PATHS=read\` runs the reads only). Gateway CPU ms per request is the server process's utime + stime
(/proc) over all its rounds of that path divided by its responses; "after/before" is the ratio of the
two; the database's is that of the PostgreSQL backends of the side's database over the same rounds.
KB allocated is what the gateway's JavaScript heap allocated over its rounds of reads divided by its
responses (bench/allocation-probe.mjs, V8's GC profiler), which other work on the machine hardly moves.
req/s is the median round. Load is the 1-minute load average at start / end (2 shared cores). Sections
above hold earlier runs written by hand.

Run: \`BEFORE=<other checkout, built> DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npx tsx bench/checkouts-ab.ts\`.

| Date | Machine | Before | After | Rounds | Read req/s before / after | Read CPU ms before | Read CPU ms after | Read after/before | Read database CPU ms before / after | Read KB allocated before / after | Create CPU ms before | Create CPU ms after | Create after/before | Load start / end |
|---|---|---|---|---|---|---:|---:|---:|---|---|---:|---:|---:|---|
`

/** Where each side's allocation probe (bench/allocation-probe.mjs, preloaded into both gateways) writes. */
const PROBES = mkdtempSync(join(os.tmpdir(), "checkouts-ab-"))
const probeFile = (name: string) => join(PROBES, `${name}.json`)

const startIn = async (name: string, dir: string, env: Record<string, string>): Promise<Server> => {
  const port = await freePort()
  const profile = PROFILE === undefined ? [] : ["--cpu-prof", `--cpu-prof-dir=${join(resolve(PROFILE), name)}`]
  const probe = ["--import", join(ROOT, "bench", "allocation-probe.mjs")]
  const child = spawn(process.execPath, [...profile, ...probe, "dist/src/main.js"], {
    cwd: dir,
    env: {
      ...process.env,
      HOST: "127.0.0.1",
      PORT: String(port),
      ADMIN_TOKEN,
      ALLOCATION_PROBE_FILE: probeFile(name),
      ...env
    },
    stdio: ["ignore", "ignore", "ignore"]
  })
  const server = { name, url: `http://127.0.0.1:${port}`, child }
  await waitReady(server, "/readyz")
  return server
}

/** The bytes the gateway's JavaScript heap allocated during `run` (its probe, started and stopped by SIGUSR2). */
const allocatedBytes = async <A>(server: Server, run: () => Promise<A>) => {
  const file = probeFile(server.name)
  rmSync(file, { force: true })
  server.child.kill("SIGUSR2")
  // The signal is handled on the gateway's next turn of its event loop; autocannon's own start takes longer.
  const result = await run()
  server.child.kill("SIGUSR2")
  for (let waited = 0; !existsSync(file); waited += 10) {
    if (waited > 10_000) throw new Error(`${server.name}: no allocation count in ${file}`)
    await new Promise((ok) => setTimeout(ok, 10))
  }
  return { result, bytes: (JSON.parse(readFileSync(file, "utf8")) as { bytes: number }).bytes }
}

const post = async (server: Server, path: string, key: string, json: unknown) => {
  const res = await fetch(server.url + path, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: typeof json === "string" ? json : JSON.stringify(json)
  })
  const body = await res.json() as any
  if (res.status >= 300) throw new Error(`${server.name} POST ${path}: ${res.status} ${JSON.stringify(body)}`)
  return body
}

/** A gateway with 100 funded accounts (model keys for creates) and one task to read (with a resource key). */
const prepared = async (name: string, dir: string, serverUrl: string, cleanups: Array<() => Promise<unknown>>) => {
  const install = await gatewayInstallation(
    serverUrl,
    `ab${name}`,
    (limits) => {
      limits.rate_limits.create = { per_second: 1_000_000, burst: 1_000_000 }
      limits.rate_limits.read = { per_second: 1_000_000, burst: 1_000_000 }
    },
    cleanups,
    dir
  )
  const server = await startIn(name, dir, {
    ROLE: "api",
    DATA_DIR: install.dataDir,
    CONFIG_DIR: install.configDir,
    DATABASE_URL: install.databaseUrl
  })
  cleanups.unshift(() => stop(server))
  const accounts = await Promise.all(Array.from({ length: SPREAD }, async (_, i) => {
    const account = await post(server, "/admin/v1/accounts", ADMIN_TOKEN, { name: `ab-${i}`, wallet_credits: 1e9 })
    const model = await post(server, `/admin/v1/accounts/${account.id}/keys`, ADMIN_TOKEN, { kind: "model" })
    const resource = await post(server, `/admin/v1/accounts/${account.id}/keys`, ADMIN_TOKEN, { kind: "resource" })
    return { model: model.key as string, resource: resource.key as string }
  }))
  const task = await post(server, "/v1/video/tasks", accounts[0]!.model, BODY)
  return { server, accounts, taskId: task.id as string, database: new URL(install.databaseUrl).pathname.slice(1) }
}

/** utime + stime of a process, or undefined once it is gone. */
const ticksOf = (pid: number) => {
  try {
    return cpuTicks(pid)
  } catch {
    return undefined
  }
}

/**
 * PostgreSQL's CPU for one database over `run`: the utime + stime of the
 * backends connected to it when `run` starts (the gateway's pool, warmed
 * up; PostgreSQL runs on this machine). A backend gone before the end
 * counts for nothing.
 */
const databaseCpuMs = async <A>(serverUrl: string, database: string, run: () => Promise<A>) => {
  const { rows } = await withClient(
    serverUrl,
    (c) => c.query<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE datname = $1", [database])
  )
  const before = rows.map(({ pid }) => [pid, ticksOf(pid)] as const)
  const result = await run()
  let ticks = 0
  for (const [pid, start] of before) {
    const end = ticksOf(pid)
    if (start !== undefined && end !== undefined) ticks += end - start
  }
  return { result, cpuMs: (ticks * 1000) / CLK_TCK }
}

const git = (args: ReadonlyArray<string>) => execFileSync("git", args, { cwd: ROOT, encoding: "utf8" }).trim()

/** The commit to compare with when none is named: the newest release tag, or HEAD (the work tree's changes). */
const lastRelease = () => git(["tag", "--list", "v*", "--sort=-v:refname"]).split("\n")[0] || "HEAD"

/**
 * The other side as a checkout of its own: `rev` exported with git archive
 * into a temporary directory, given this checkout's node_modules (a commit
 * whose dependencies differ needs BEFORE, a checkout installed by hand) and
 * built as `npm run build` builds.
 */
const exportCommit = (rev: string, cleanups: Array<() => Promise<unknown>>) => {
  const commit = git(["rev-parse", "--verify", `${rev}^{commit}`])
  const dir = mkdtempSync(join(os.tmpdir(), `checkouts-ab-${commit.slice(0, 7)}-`))
  cleanups.push(async () => rmSync(dir, { recursive: true, force: true }))
  log(`exporting ${rev} (${commit.slice(0, 7)}) into ${dir} and building it`)
  execFileSync("sh", ["-c", `git archive ${commit} | tar -x -C '${dir}'`], { cwd: ROOT })
  symlinkSync(join(ROOT, "node_modules"), join(dir, "node_modules"))
  execFileSync(process.execPath, ["scripts/build.mjs"], { cwd: dir, stdio: "ignore" })
  return { dir, commit }
}

const main = async () => {
  const cleanups: Array<() => Promise<unknown>> = []
  // BEFORE names a built checkout; otherwise each commit of AGAINST (comma-separated) is exported and built.
  const others = process.env.BEFORE === undefined
    ? (process.env.AGAINST ?? lastRelease()).split(",").map((rev) => exportCommit(rev.trim(), cleanups))
    : [{ dir: resolve(process.env.BEFORE), commit: process.env.BEFORE_COMMIT }]
  const serverUrl = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test"
  const loadStart = os.loadavg()[0]!
  // This checkout's dist/ as its sources are (the other checkout is built by whoever names it).
  buildIfStale()
  try {
    const sides = [
      ...await Promise.all(others.map(async (other, i) => {
        const label = others.length === 1 ? "before" : `before${i + 1}`
        return {
          label,
          dir: other.dir,
          // An export of a commit (git archive) is no work tree: its commit is known, or BEFORE_COMMIT names it.
          commit: other.commit ?? await gitHead(other.dir),
          ...(await prepared(label, other.dir, serverUrl, cleanups))
        }
      })),
      { label: "after", dir: ROOT, commit: undefined, ...(await prepared("after", ROOT, serverUrl, cleanups)) }
    ]
    const read = (side: (typeof sides)[number], durationS: number) =>
      measureRound(side.server, {
        path: `/v1/video/tasks/${side.taskId}`,
        connections: CONNECTIONS,
        headers: { authorization: `Bearer ${side.accounts[0]!.resource}` }
      }, durationS)
    const create = (side: (typeof sides)[number], durationS: number) => {
      let next = 0
      const headers = { "content-type": "application/json" }
      return measureRound(side.server, {
        path: "/v1/video/tasks",
        connections: CONNECTIONS,
        requests: [{
          method: "POST",
          body: BODY,
          headers,
          setupRequest: (request) => ({
            ...request,
            headers: { ...headers, authorization: `Bearer ${side.accounts[next++ % SPREAD]!.model}` }
          })
        }]
      }, durationS)
    }
    const paths = ([["read", read], ["create", create]] as const).filter(([path]) => PATHS.includes(path))
    for (const side of sides) for (const [, run] of paths) await run(side, 2)
    const rounds: Record<string, Array<Round>> = {}
    const dbCpuMs: Record<string, Array<number>> = {}
    const allocated: Record<string, Array<number>> = {}
    for (let i = 0; i < ROUNDS; i++) {
      // The order flips every round, so neither side always runs first.
      for (const side of i % 2 === 0 ? sides : [...sides].reverse()) {
        for (const [path, run] of paths) {
          const { cpuMs: dbMs, result: { bytes, result: r } } = await databaseCpuMs(
            serverUrl,
            side.database,
            () => allocatedBytes(side.server, () => run(side, ROUND_S))
          )
          ;(dbCpuMs[`${side.label} ${path}`] ??= []).push(dbMs)
          ;(allocated[`${side.label} ${path}`] ??= []).push(bytes)
          if (r.non2xx > 0 || r.errors > 0) {
            throw new Error(`${side.label} ${path}: ${r.non2xx} non-2xx, ${r.errors} errors`)
          }
          ;(rounds[`${side.label} ${path}`] ??= []).push(r)
          log(
            `round ${i + 1} ${side.label} ${path}: ${r.rps} req/s, ${r.cpuMsPerReq} ms CPU/req, database ${
              (dbMs / Math.max(1, r.requests)).toFixed(3)
            } ms CPU/req, ${(bytes / Math.max(1, r.requests) / 1024).toFixed(2)} KB allocated/req`
          )
        }
      }
    }
    const cpu = (rs: ReadonlyArray<Round>) =>
      rs.reduce((s, r) => s + r.cpuMsPerReq * r.requests, 0) / rs.reduce((s, r) => s + r.requests, 0)
    const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!
    const result: Record<
      string,
      {
        cpuMsPerReq: number
        dbCpuMsPerReq: number
        kbAllocatedPerReq: number
        medianRps: number
        requests: number
        rounds: Array<number>
        dbRounds: Array<number>
      }
    > = Object.fromEntries(
      Object.entries(rounds).map(([k, rs]) => {
        const requests = rs.reduce((s, r) => s + r.requests, 0)
        const db = dbCpuMs[k]!
        return [k, {
          cpuMsPerReq: Number(cpu(rs).toFixed(4)),
          dbCpuMsPerReq: Number((db.reduce((s, ms) => s + ms, 0) / Math.max(1, requests)).toFixed(4)),
          kbAllocatedPerReq: Number(
            (allocated[k]!.reduce((s, b) => s + b, 0) / Math.max(1, requests) / 1024).toFixed(2)
          ),
          medianRps: median(rs.map((r) => r.rps)),
          requests,
          rounds: rs.map((r) => r.cpuMsPerReq),
          dbRounds: rs.map((r, i) => Number((db[i]! / Math.max(1, r.requests)).toFixed(3)))
        }]
      })
    )
    const m = machine()
    // A work tree with changes not committed yet is HEAD and more: `+` says so.
    const after = `${await gitHead()}${git(["status", "--porcelain", "--untracked-files=no"]) === "" ? "" : "+"}`
    const loadEnd = os.loadavg()[0]!
    const date = new Date().toISOString().slice(0, 10)
    const cell = (key: string, field: "cpuMsPerReq" | "dbCpuMsPerReq" | "kbAllocatedPerReq" | "medianRps") =>
      result[key] === undefined
        ? "–"
        : field === "medianRps"
        ? String(Math.round(result[key][field]))
        : result[key][field].toFixed(field === "kbAllocatedPerReq" ? 2 : 3)
    const befores = sides.filter((side) => side.label !== "after")
    const entry = {
      machine: `${m.cpu}, ${m.cores} cores, node ${m.node}`,
      before: befores.map((side) => ({ label: side.label, dir: side.dir, commit: side.commit })),
      after,
      rounds: ROUNDS,
      roundS: ROUND_S,
      result,
      load: [loadStart, loadEnd]
    }
    log(JSON.stringify(entry))
    // One row per other side, each against this checkout, all from the same interleaved rounds.
    const rows = befores.map(({ commit, dir, label }) => {
      const ratio = (path: string) =>
        result[`${label} ${path}`] === undefined
          ? "–"
          : (result[`after ${path}`]!.cpuMsPerReq / result[`${label} ${path}`]!.cpuMsPerReq).toFixed(3)
      for (const [path] of paths) {
        const [b, a] = [result[`${label} ${path}`], result[`after ${path}`]]
        if (b !== undefined && a !== undefined) {
          log(
            `${path}: after/${commit?.slice(0, 7) ?? label} ${(a.medianRps / b.medianRps).toFixed(3)}x the requests ` +
              `per second, ${(a.cpuMsPerReq / b.cpuMsPerReq).toFixed(3)}x the CPU per request`
          )
        }
      }
      return [
        date,
        machineLine(),
        commit?.slice(0, 7) ?? dir,
        after.slice(0, 7) + (after.endsWith("+") ? "+" : ""),
        `${ROUNDS} × ${ROUND_S} s`,
        `${cell(`${label} read`, "medianRps")} / ${cell("after read", "medianRps")}`,
        cell(`${label} read`, "cpuMsPerReq"),
        cell("after read", "cpuMsPerReq"),
        ratio("read"),
        `${cell(`${label} read`, "dbCpuMsPerReq")} / ${cell("after read", "dbCpuMsPerReq")}`,
        `${cell(`${label} read`, "kbAllocatedPerReq")} / ${cell("after read", "kbAllocatedPerReq")}`,
        cell(`${label} create`, "cpuMsPerReq"),
        cell("after create", "cpuMsPerReq"),
        ratio("create"),
        `${loadStart.toFixed(2)} / ${loadEnd.toFixed(2)}`
      ].reduce((row, c) => `${row} ${c} |`, "|")
    })
    const file = recordRun("checkouts-ab", date, entry, HEADER, rows)
    log(`recorded in ${file} and bench/RESULTS.md`)
  } finally {
    for (const cleanup of cleanups) await cleanup().catch(() => undefined)
    rmSync(PROBES, { recursive: true, force: true })
  }
}

await main()
