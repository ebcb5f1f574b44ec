/**
 * Benchmark: live status streams (docs/api.md, Following a task) held open on
 * one API process. On PostgreSQL, one API process (`ROLE=api`) and, once the
 * streams are open, one worker process (`ROLE=worker`), both
 * `node --import tsx src/main.ts`, on a database created for the run.
 *
 *   DATABASE_URL=postgres://… npm run bench:streams
 *
 * 100 video tasks are created while no worker runs (they stay queued), then
 * 1,000 streams are opened on the API process, 10 per task, each read as it
 * arrives. Measured on the API process alone, from /proc: its RSS and CPU
 * before the streams, with the 1,000 streams open and idle (keep-alives and
 * the 5 s re-reads only) for SETTINGS.restS, and while the worker finishes
 * the 100 tasks (every stream gets each change and ends with its task). The
 * events every stream received are checked: each ends on its terminal state.
 *
 * Adds a row to the "streams" section of bench/RESULTS.md and an entry to
 * bench/results/streams-<date>.json.
 */
import { randomBytes } from "node:crypto"
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import http from "node:http"
import * as os from "node:os"
import { join } from "node:path"
import { addRows } from "./markdown.ts"
import { cpuTicks, type Server, startProcess, stop, waitReady } from "./servers.ts"
import {
  freePort,
  gitHead,
  machine,
  RESULTS_DIR,
  RESULTS_MD,
  ROOT,
  round,
  sleep,
  withClient,
  withDatabase
} from "./support.ts"

const ADMIN_TOKEN = "adm_bench_streams_0123456789abcdefghij"
const SETTINGS = {
  model: "provy-famS-2.0-480p",
  tasks: 100,
  streamsPerTask: 10,
  /** Seconds the open streams are measured idle. */
  restS: 30,
  /** Sandbox channel concurrency of the worker process. */
  concurrency: 4
} as const
const CLK_TCK = 100

const log = (message: string) => console.log(`[bench] ${message}`)

const rssMiB = (pid: number) => {
  const status = readFileSync(`/proc/${pid}/status`, "utf8")
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? NaN)
  return round(kb / 1024, 1)
}

const request = async (base: string, method: string, path: string, key: string, json?: unknown) => {
  const res = await fetch(base + path, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(json === undefined ? {} : { "content-type": "application/json" }) },
    ...(json === undefined ? {} : { body: JSON.stringify(json) })
  })
  return { status: res.status, body: await res.json() as any }
}

/** One stream over its own connection: counts `task` events and remembers the last status; resolves when it ends. */
const openStream = (base: string, path: string, key: string) =>
  new Promise<{ readonly opened: Promise<void>; readonly ended: Promise<{ events: number; last: string }> }>(
    (ok, fail) => {
      let events = 0
      let last = ""
      let opened!: () => void
      const openedP = new Promise<void>((r) => (opened = r))
      const ended = new Promise<{ events: number; last: string }>((done, broke) => {
        const req = http.get(base + path, { headers: { authorization: `Bearer ${key}` }, agent: false }, (res) => {
          if (res.statusCode !== 200) return broke(new Error(`stream: ${res.statusCode}`))
          res.setEncoding("utf8")
          let buffer = ""
          res.on("data", (chunk: string) => {
            buffer += chunk
            let at: number
            while ((at = buffer.indexOf("\n\n")) >= 0) {
              const block = buffer.slice(0, at)
              buffer = buffer.slice(at + 2)
              const data = /^data: (.*)$/m.exec(block)
              if (data !== null) {
                events++
                last = JSON.parse(data[1]!).status
                if (events === 1) opened()
              }
            }
          })
          res.on("end", () => done({ events, last }))
          res.on("error", broke)
        })
        req.on("error", broke)
      })
      ended.catch(fail)
      ok({ opened: openedP, ended })
    }
  )

/** CPU of `pid` as a share of one core, and its RSS, over `seconds` (or until `until` resolves). */
const measure = async (pid: number, seconds: number | Promise<unknown>) => {
  const t0 = Date.now()
  const c0 = cpuTicks(pid)
  let peak = rssMiB(pid)
  const sampler = setInterval(() => (peak = Math.max(peak, rssMiB(pid))), 500)
  await (typeof seconds === "number" ? sleep(seconds * 1000) : seconds)
  clearInterval(sampler)
  const elapsed = (Date.now() - t0) / 1000
  const cpu = ((cpuTicks(pid) - c0) / CLK_TCK) / elapsed
  return { seconds: round(elapsed, 1), cpuPercent: round(cpu * 100, 1), rssMiB: rssMiB(pid), peakRssMiB: peak }
}

const main = async () => {
  const serverUrl = process.env.DATABASE_URL
  if (serverUrl === undefined) throw new Error("DATABASE_URL (a PostgreSQL server) is required")
  const cleanups: Array<() => Promise<unknown> | unknown> = []
  const procs: Array<Server> = []
  try {
    const dataDir = mkdtempSync(join(os.tmpdir(), "gw-bench-streams-"))
    cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }))
    const configDir = mkdtempSync(join(os.tmpdir(), "gw-bench-streams-config-"))
    cleanups.push(() => rmSync(configDir, { recursive: true, force: true }))
    writeFileSync(join(configDir, "groups.json"), readFileSync(join(ROOT, "config", "groups.json")))
    const limits = JSON.parse(readFileSync(join(ROOT, "config", "limits.json"), "utf8"))
    for (const rate of Object.values(limits.rate_limits) as Array<any>) rate.per_second = rate.burst = 1_000_000
    limits.streams_per_key = SETTINGS.tasks * SETTINGS.streamsPerTask
    writeFileSync(join(configDir, "limits.json"), JSON.stringify(limits, null, 2))
    const models = JSON.parse(readFileSync(join(ROOT, "config", "models.json"), "utf8"))
    models.channels = { sandbox: { concurrency: SETTINGS.concurrency } }
    writeFileSync(join(configDir, "models.json"), JSON.stringify(models, null, 2))

    const name = `bench_streams_${Date.now().toString(36)}_${randomBytes(4).toString("hex")}`
    await withClient(serverUrl, (c) => c.query(`CREATE DATABASE ${name}`))
    const databaseUrl = withDatabase(serverUrl, name)
    cleanups.push(() => withClient(serverUrl, (c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)))

    const port = await freePort()
    const base = `http://127.0.0.1:${port}`
    const env = (role: string) => ({
      HOST: "127.0.0.1",
      PORT: String(port),
      ROLE: role,
      DATA_DIR: dataDir,
      CONFIG_DIR: configDir,
      DATABASE_URL: databaseUrl,
      ADMIN_TOKEN,
      ENCRYPTION_KEY: "bench-streams-encryption-key",
      STORAGE_SIGNING_KEY: "bench-streams-storage-signing-key",
      PUBLIC_BASE_URL: base
    })
    const api = startProcess("api", ["--import", "tsx", "src/main.ts"], env("api"), port, log)
    procs.push(api)
    await waitReady(api, "/healthz")
    const pid = api.child.pid!

    const account = await request(base, "POST", "/admin/v1/accounts", ADMIN_TOKEN, {
      name: "bench",
      wallet_credits: 100_000
    })
    const keyOf = async (kind: string) =>
      (await request(base, "POST", `/admin/v1/accounts/${account.body.id}/keys`, ADMIN_TOKEN, { kind })).body.key
    const modelKey = await keyOf("model")
    const resourceKey = await keyOf("resource")
    const ids: Array<string> = []
    for (let i = 0; i < SETTINGS.tasks; i++) {
      const created = await request(base, "POST", "/v1/video/tasks", modelKey, {
        model: SETTINGS.model,
        operation: "generation",
        input: { prompt: `bench stream ${i}` },
        output: { duration: 4 }
      })
      if (created.status !== 202) throw new Error(`create: ${created.status} ${JSON.stringify(created.body)}`)
      ids.push(created.body.id)
    }
    await sleep(3000)
    const before = await measure(pid, 10)
    log(`before streams: ${JSON.stringify(before)}`)

    const streams = []
    for (const id of ids) {
      for (let j = 0; j < SETTINGS.streamsPerTask; j++) {
        streams.push(await openStream(base, `/v1/video/tasks/${id}/events`, resourceKey))
      }
    }
    await Promise.all(streams.map((s) => s.opened))
    log(`${streams.length} streams open`)
    await sleep(3000)
    const rest = await measure(pid, SETTINGS.restS)
    log(`at rest: ${JSON.stringify(rest)}`)

    const worker = startProcess("worker", ["--import", "tsx", "src/main.ts"], env("worker"), port, log)
    procs.push(worker)
    const ended = Promise.all(streams.map((s) => s.ended))
    const finishing = await measure(pid, ended)
    const outcomes = await ended
    const terminal = outcomes.filter((o) => o.last === "succeeded" || o.last === "failed").length
    const events = outcomes.reduce((n, o) => n + o.events, 0)
    log(`while finishing: ${JSON.stringify(finishing)}; ${terminal}/${outcomes.length} streams ended terminal`)
    if (terminal !== outcomes.length) throw new Error(`${outcomes.length - terminal} streams ended before their task`)
    const after = await measure(pid, 10)

    const result = {
      date: new Date().toISOString(),
      commit: await gitHead(),
      machine: machine(),
      loadAverage: os.loadavg().map((n) => round(n, 2)),
      settings: SETTINGS,
      streams: streams.length,
      events,
      before,
      rest,
      finishing,
      after
    }
    mkdirSync(RESULTS_DIR, { recursive: true })
    const file = join(RESULTS_DIR, `streams-${result.date.slice(0, 10)}.json`)
    const runs = existsSync(file) ? JSON.parse(readFileSync(file, "utf8")) : []
    writeFileSync(file, JSON.stringify([...runs, result], null, 2) + "\n")
    const m = result.machine
    const header = `## streams

1,000 live status streams (10 on each of 100 video tasks) held open on one
API process (\`ROLE=api\`, \`node --import tsx src/main.ts\`) on PostgreSQL;
a worker process (\`ROLE=worker\`, sandbox concurrency ${SETTINGS.concurrency})
started once they are open finishes the 100 tasks. CPU is the API process's
own (utime + stime from /proc, as a share of one core) and RSS its resident
memory: before the streams, with them open and idle for ${SETTINGS.restS} s, and
while the tasks finish (until every stream has ended on its terminal state).
Load average is the machine's (1, 5, 15 min) at the end of the run.

Run: \`DATABASE_URL=postgres://… npm run bench:streams\`.

| Date | Machine | Load avg | Streams | Events | Before: CPU % / RSS MiB | Open, idle: CPU % / RSS MiB | Finishing: s / CPU % / peak RSS MiB | After: CPU % / RSS MiB |
|---|---|---|---:|---:|---:|---:|---:|---:|
`
    const row = `| ${result.date.slice(0, 10)} | ${m.cpu}, ${m.cores} cores, ${m.memoryGiB} GiB, node ${m.node} | ${
      result.loadAverage.join(" ")
    } | ${streams.length} | ${events} | ${before.cpuPercent} / ${before.rssMiB} | ${rest.cpuPercent} / ${rest.rssMiB} | ${finishing.seconds} / ${finishing.cpuPercent} / ${finishing.peakRssMiB} | ${after.cpuPercent} / ${after.rssMiB} |`
    writeFileSync(RESULTS_MD, addRows(readFileSync(RESULTS_MD, "utf8"), "streams", header, [row]))
    log(`written: ${file} and bench/RESULTS.md`)
  } finally {
    for (const p of procs.reverse()) await stop(p).catch(() => undefined)
    for (const c of cleanups.reverse()) await Promise.resolve(c()).catch(() => undefined)
  }
}

main().catch((e) => {
  console.error(e)
  process.exitCode = 1
})
