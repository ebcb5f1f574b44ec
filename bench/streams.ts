/**
 * Benchmark: idle live status streams (docs/api.md, Following a task) held
 * open on one API process, and what they cost it: memory per stream, CPU,
 * and the database's statements while they wait.
 *
 *   DATABASE_URL=postgres://… npm run bench:streams
 *   STREAMS=5000 REST_S=30 …                           # defaults
 *   SERVICE_DIR=/path/to/other/checkout SERVICE_COMMIT=<its commit> …   # another checkout's compiled service (its dist/)
 *
 * Two cases, each on a fresh API process (`ROLE=api`, `node dist/src/main.js`,
 * so no worker takes the tasks) and a database created for the run:
 * "spread", STREAMS streams over STREAMS/5 queued video tasks (5 each), and
 * "one task", STREAMS streams on a single task. The streams are opened by a
 * client in a process of its own (bench/streams-client.ts: raw sockets, one
 * per stream), so the client's own sockets and parsing cost the measured
 * process nothing. Measured on the API process from /proc: RSS and CPU
 * before the streams (10 s), then with every stream open and idle for
 * REST_S (keep-alives and the periodic re-reads only); the memory of an idle
 * stream is the difference in RSS divided by the streams. The database's
 * transactions per second over the same windows (pg_stat_database, every
 * statement outside a transaction being one) count the re-reads. Then every
 * task moves twice (`in_progress` 10, then 50) and ends (`failed`), each
 * step one UPDATE of all the case's tasks, as the engine's writes would
 * (the table's trigger announces each): each step waits until every stream
 * has its event, and every stream must end on the terminal state having had
 * exactly four events.
 *
 * Records the run in the "streams-idle" section of bench/RESULTS.md and
 * bench/results/streams-idle-<date>.json.
 */
import { type ChildProcess, fork, spawn } from "node:child_process"
import { existsSync, readFileSync, rmSync } from "node:fs"
import * as os from "node:os"
import { join, resolve } from "node:path"
import buildIfStale from "../test/support/build.ts"
import { cpuTicks, gatewayInstallation, type Server, stop, waitReady } from "./servers.ts"
import type { Counts } from "./streams-client.ts"
import { freePort, gitHead, machine, recordRun, ROOT, round, sleep, withClient } from "./support.ts"

const ADMIN_TOKEN = "adm_bench_streams_0123456789abcdefghij"
const STREAMS = Number(process.env.STREAMS ?? 5000)
const SETTINGS = {
  model: "provy-famS-2.0-480p",
  streams: STREAMS,
  cases: [
    { name: "spread", tasks: Math.max(1, Math.round(STREAMS / 5)) },
    { name: "one task", tasks: 1 }
  ],
  /** Seconds the open streams are measured idle. */
  restS: Number(process.env.REST_S ?? 30),
  /** Streams the client opens at once. */
  openConcurrency: 50
} as const
const SERVICE_DIR = resolve(process.env.SERVICE_DIR ?? ROOT)
/** Seconds between a burst of requests and the window after it. */
const SETTLE_S = 12
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

/**
 * The compiled service of SERVICE_DIR, with bench/memory-probe.mjs preloaded
 * (its live memory on SIGUSR2); its output drained (a full pipe would block
 * its log writes).
 */
const startApi = async (env: Record<string, string>, probeFile: string): Promise<Server> => {
  const port = await freePort()
  const probe = join(ROOT, "bench", "memory-probe.mjs")
  const child = spawn(process.execPath, ["--expose-gc", "--import", probe, "dist/src/main.js"], {
    cwd: SERVICE_DIR,
    env: {
      ...process.env,
      HOST: "127.0.0.1",
      PORT: String(port),
      ROLE: "api",
      ADMIN_TOKEN,
      MEMORY_PROBE_FILE: probeFile,
      ...env
    },
    stdio: ["ignore", "pipe", "pipe"]
  })
  const tail: Array<string> = []
  for (const out of [child.stdout!, child.stderr!]) {
    out.on("data", (d: Buffer) => {
      tail.push(d.toString().slice(0, 500))
      if (tail.length > 20) tail.shift()
    })
  }
  child.on("exit", (code) => code && log(`api exited ${code}: ${tail.join("")}`))
  const server = { name: "api", url: `http://127.0.0.1:${port}`, child }
  await waitReady(server, "/readyz")
  return server
}

/** The database's committed and rolled-back transactions so far (flushed by its backends within about a second). */
const transactions = (databaseUrl: string) =>
  withClient(databaseUrl, async (c) => {
    const r = await c.query(
      "SELECT xact_commit + xact_rollback AS n FROM pg_stat_database WHERE datname = current_database()"
    )
    return Number(r.rows[0].n)
  })

/** The service's memory after a full collection (bench/memory-probe.mjs), in MiB: RSS and the V8 heap in use. */
const liveMemory = async (pid: number, probeFile: string) => {
  rmSync(probeFile, { force: true })
  process.kill(pid, "SIGUSR2")
  for (let i = 0; !existsSync(probeFile); i++) {
    if (i > 600) throw new Error("the memory probe did not answer")
    await sleep(50)
  }
  const usage = JSON.parse(readFileSync(probeFile, "utf8"))
  return { rssMiB: rssMiB(pid), heapMiB: round(usage.heapUsed / 1024 ** 2, 1) }
}

/** Task rows the service's watchers have read (`mtg_task_watch_reads_total`, every reason); null where there is no such counter. */
const watchReads = async (base: string) => {
  const res = await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
  const text = await res.text()
  const samples = [...text.matchAll(/^mtg_task_watch_reads_total\{[^}]*\} (\S+)$/gm)]
  return samples.length === 0 ? null : samples.reduce((n, m) => n + Number(m[1]), 0)
}

/**
 * CPU of `pid` as a share of one core, the database's transactions per
 * second and the task rows its watchers read per second, over `seconds`;
 * then its memory: RSS as it was, and RSS and heap after a full collection.
 */
const measure = async (pid: number, base: string, databaseUrl: string, seconds: number, probeFile: string) => {
  const r0 = await watchReads(base)
  const t0 = Date.now()
  const c0 = cpuTicks(pid)
  const x0 = await transactions(databaseUrl)
  await sleep(seconds * 1000)
  const elapsed = (Date.now() - t0) / 1000
  const cpu = ((cpuTicks(pid) - c0) / CLK_TCK) / elapsed
  // The two statements of this measure's own connections are left out.
  const xacts = (await transactions(databaseUrl)) - x0 - 2
  const r1 = await watchReads(base)
  const rawRssMiB = rssMiB(pid)
  return {
    seconds: round(elapsed, 1),
    cpuPercent: round(cpu * 100, 1),
    queriesPerS: round(Math.max(0, xacts) / elapsed, 1),
    taskReadsPerS: r0 === null || r1 === null ? null : round((r1 - r0) / elapsed, 1),
    rawRssMiB,
    ...(await liveMemory(pid, probeFile))
  }
}

/** The client process (bench/streams-client.ts) and a call-and-answer over its IPC channel. */
const startClient = async () => {
  const child: ChildProcess = fork(join(ROOT, "bench", "streams-client.ts"), [], {
    execArgv: ["--import", "tsx"],
    stdio: ["ignore", "inherit", "inherit", "ipc"]
  })
  const answers: Array<(message: any) => void> = []
  child.on("message", (message) => answers.shift()?.(message))
  const next = () => new Promise<any>((ok) => answers.push(ok))
  await next() // ready
  const call = (message: unknown) => {
    const answer = next()
    child.send(message as any)
    return answer
  }
  return {
    open: (port: number, key: string, paths: Array<string>) =>
      call({ open: { port, key, paths, concurrency: SETTINGS.openConcurrency } }) as Promise<
        { opened: number; refusedCount: number; refused: Array<string> }
      >,
    counts: () => call({ counts: true }).then((m) => m.counts as Counts),
    close: async () => {
      const exited = new Promise((ok) => child.once("exit", ok))
      child.send({ close: true })
      await exited
    }
  }
}

const until = async (what: string, check: () => Promise<boolean>, deadlineS = 600) => {
  const t0 = Date.now()
  while (!(await check())) {
    if (Date.now() - t0 > deadlineS * 1000) throw new Error(`not within ${deadlineS} s: ${what}`)
    await sleep(200)
  }
  return round((Date.now() - t0) / 1000, 1)
}

const runCase = async (
  install: { configDir: string; dataDir: string; databaseUrl: string },
  testCase: { readonly name: string; readonly tasks: number }
) => {
  const cleanups: Array<() => Promise<unknown>> = []
  const probeFile = join(install.dataDir, "memory-probe.json")
  try {
    const api = await startApi({
      DATA_DIR: install.dataDir,
      CONFIG_DIR: install.configDir,
      DATABASE_URL: install.databaseUrl,
      PUBLIC_BASE_URL: "http://127.0.0.1"
    }, probeFile)
    cleanups.unshift(() => stop(api))
    const pid = api.child.pid!
    const port = Number(new URL(api.url).port)
    const account = await request(api.url, "POST", "/admin/v1/accounts", ADMIN_TOKEN, {
      name: `bench ${testCase.name}`,
      wallet_credits: 1_000_000
    })
    const keyOf = async (kind: string) =>
      (await request(api.url, "POST", `/admin/v1/accounts/${account.body.id}/keys`, ADMIN_TOKEN, { kind })).body.key
    const modelKey = await keyOf("model")
    const resourceKey = await keyOf("resource")
    const ids: Array<string> = []
    await Promise.all(Array.from({ length: 10 }, async () => {
      while (ids.length < testCase.tasks) {
        const n = ids.push("")
        const created = await request(api.url, "POST", "/v1/video/tasks", modelKey, {
          model: SETTINGS.model,
          operation: "generation",
          input: { prompt: `bench stream ${n}` },
          output: { duration: 4 }
        })
        if (created.status !== 202) throw new Error(`create: ${created.status} ${JSON.stringify(created.body)}`)
        ids[n - 1] = created.body.id
      }
    }))
    // PostgreSQL's backends report their statements to pg_stat_database within about 10 s of going idle:
    // the creates' (and below, the streams' opening) reports are let in before a window starts.
    await sleep(SETTLE_S * 1000)
    const before = await measure(pid, api.url, install.databaseUrl, 10, probeFile)
    log(`${testCase.name}: before streams ${JSON.stringify(before)}`)

    const client = await startClient()
    cleanups.unshift(() => client.close())
    const paths = Array.from({ length: SETTINGS.streams }, (_, i) => `/v1/video/tasks/${ids[i % ids.length]}/events`)
    const t0 = Date.now()
    const opened = await client.open(port, resourceKey, paths)
    const openS = round((Date.now() - t0) / 1000, 1)
    if (opened.refusedCount > 0) throw new Error(`${opened.refusedCount} streams refused: ${opened.refused.join("; ")}`)
    log(`${testCase.name}: ${opened.opened} streams open in ${openS} s`)
    await sleep(SETTLE_S * 1000)
    const rest = await measure(pid, api.url, install.databaseUrl, SETTINGS.restS, probeFile)
    const perStream = (before: number, after: number) => round(((after - before) * 1024) / SETTINGS.streams, 1)
    const kbPerStream = {
      rss: perStream(before.rssMiB, rest.rssMiB),
      heap: perStream(before.heapMiB, rest.heapMiB),
      rawRss: perStream(before.rawRssMiB, rest.rawRssMiB)
    }
    log(`${testCase.name}: at rest ${JSON.stringify(rest)}, KB per stream ${JSON.stringify(kbPerStream)}`)

    // Every task moves twice and ends; each step is delivered to every stream before the next.
    const c0 = cpuTicks(pid)
    const x0 = await transactions(install.databaseUrl)
    const steps: Array<number> = []
    const step = (set: string) =>
      withClient(install.databaseUrl, (c) => c.query(`UPDATE tasks SET ${set} WHERE id = ANY($1)`, [ids]))
    for (const [k, percent] of [[2, 10], [3, 50]] as const) {
      await step(`status = 'in_progress', progress = ${percent}`)
      steps.push(
        await until(
          `every stream has its event of ${percent} %`,
          async () => (await client.counts()).withEvents[k - 1] === SETTINGS.streams
        )
      )
    }
    await step(
      `status = 'failed', run_state = 'done', completed_at = 1700000000,
       error = '{"code":"generation_failed","message":"bench","retryable":false}'::jsonb`
    )
    steps.push(await until("every stream ended", async () => (await client.counts()).ended === SETTINGS.streams))
    const changeS = steps.reduce((a, b) => a + b, 0)
    const changes = {
      stepsS: steps,
      cpuS: round((cpuTicks(pid) - c0) / CLK_TCK, 2),
      queries: (await transactions(install.databaseUrl)) - x0 - 1
    }
    const counts = await client.counts()
    log(`${testCase.name}: changes ${JSON.stringify(changes)} in ${round(changeS, 1)} s; ${JSON.stringify(counts)}`)
    if (counts.endedTerminal !== SETTINGS.streams) {
      throw new Error(`${SETTINGS.streams - counts.endedTerminal} streams did not end on their terminal state`)
    }
    if (counts.events !== SETTINGS.streams * 4) {
      throw new Error(`${counts.events} events, not 4 on each of ${SETTINGS.streams} streams`)
    }
    await sleep(3000)
    const after = await liveMemory(pid, probeFile)
    return { case: testCase.name, tasks: testCase.tasks, openS, before, rest, kbPerStream, changes, counts, after }
  } finally {
    for (const c of cleanups) await c().catch(() => undefined)
  }
}

const main = async () => {
  const serverUrl = process.env.DATABASE_URL
  if (serverUrl === undefined) throw new Error("DATABASE_URL (a PostgreSQL server) is required")
  if (SERVICE_DIR === ROOT) buildIfStale()
  const cleanups: Array<() => Promise<unknown>> = []
  try {
    const install = await gatewayInstallation(serverUrl, "streams", (limits) => {
      for (const rate of Object.values(limits.rate_limits) as Array<any>) rate.per_second = rate.burst = 1_000_000
      limits.streams_per_key = SETTINGS.streams
    }, cleanups)
    const results = []
    for (const testCase of SETTINGS.cases) results.push(await runCase(install, testCase))
    const commit = SERVICE_DIR === ROOT ? await gitHead() : (process.env.SERVICE_COMMIT ?? null)
    const result = {
      date: new Date().toISOString(),
      commit,
      serviceDir: SERVICE_DIR === ROOT ? "." : SERVICE_DIR,
      machine: machine(),
      loadAverage: os.loadavg().map((n) => round(n, 2)),
      settings: SETTINGS,
      results
    }
    const m = result.machine
    const header = `## streams-idle

Idle live status streams held open on one API process (\`ROLE=api\`, \`node
dist/src/main.js\`) on PostgreSQL, each case on a fresh process: "spread",
the streams over one task per 5 streams, and "one task", every stream on one
task. The streams are opened by a client process of their own (raw sockets).
CPU is the API process's own (utime + stime from /proc, as a share of one
core) before the streams (10 s) and with them open and idle (${SETTINGS.restS} s);
memory is taken at the end of each window after a full garbage collection
(\`bench/memory-probe.mjs\`, preloaded): RSS, the process's resident memory,
and the V8 heap in use. KB per stream is the difference over the streams,
of RSS and of the heap. Queries/s are the database's transactions per second
(\`pg_stat_database\`) over the same windows, almost all of them the streams'
re-reads (a scrape of \`/metrics\` at each end of a window adds a few); task
reads/s, the rows the shared watchers read (\`mtg_task_watch_reads_total\`),
where the service has that counter. Then every task
moves twice and ends (an UPDATE of all the case's tasks per step): the
seconds until every stream had each step, and the API's CPU seconds for the
three steps; every stream ends on its terminal state after four events.
Load average is the machine's (1, 5, 15 min) at the end of the run.

Run: \`DATABASE_URL=postgres://… npm run bench:streams\` (\`SERVICE_DIR=\` another checkout's compiled service).

| Date | Commit | Machine | Load avg | Case | Streams / tasks | Before: CPU % / RSS / heap MiB / queries/s | Open, idle: CPU % / RSS / heap MiB / queries/s / task reads/s | KB per stream: RSS / heap | Steps: s / CPU s | After: RSS / heap MiB |
|---|---|---|---|---|---:|---:|---:|---:|---:|---:|
`
    const rows = results.map((r) =>
      `| ${result.date.slice(0, 10)} | ${commit?.slice(0, 7) ?? "?"}${
        SERVICE_DIR === ROOT ? "" : " (other checkout)"
      } | ${m.cpu}, ${m.cores} cores, ${m.memoryGiB} GiB, node ${m.node} | ${
        result.loadAverage.join(" ")
      } | ${r.case} | ${SETTINGS.streams} / ${r.tasks} | ${r.before.cpuPercent} / ${r.before.rssMiB} / ${r.before.heapMiB} / ${r.before.queriesPerS} | ${r.rest.cpuPercent} / ${r.rest.rssMiB} / ${r.rest.heapMiB} / ${r.rest.queriesPerS} / ${
        r.rest.taskReadsPerS ?? "–"
      } | ${r.kbPerStream.rss} / ${r.kbPerStream.heap} | ${
        r.changes.stepsS.join(" + ")
      } / ${r.changes.cpuS} | ${r.after.rssMiB} / ${r.after.heapMiB} |`
    )
    const file = recordRun("streams-idle", result.date.slice(0, 10), result, header, rows)
    log(`written: ${file} and bench/RESULTS.md`)
  } finally {
    for (const c of cleanups) await c().catch(() => undefined)
  }
}

main().catch((e) => {
  console.error(e)
  process.exitCode = 1
})
