/**
 * Benchmark, the engine (target: 0.5x pgbench; docs/performance.md): tasks per
 * second end to end. N video tasks are created through `POST /v1/video/tasks`
 * (10 clients at once) and run by the channel engine against a fake upstream
 * that answers at once (the fake upstream gateway of test/fakes/gateway.ts, in
 * this process: every task `succeeded` at its first poll, its result a real 4 s
 * 240×240 H.264 MP4 the worker downloads, inspects with ffprobe and re-hosts);
 * the round lasts from the first create to the moment the database holds all N
 * `succeeded`. Against it, in interleaved rounds:
 *
 *  - pgbench running, N times over 10 connections, the sequence of
 *    transactions the gateway makes for one task (bench/engine-throughput/
 *    task.sql, taken from the statement log of one task: see CAPTURE below);
 *  - graphile-worker 0.17 (context, not a target): N no-op jobs added in one
 *    call, then a worker (concurrency 10) runs them; from the start of the
 *    add to the last job's end.
 *
 * All three on the same database, created (and dropped) for the run. The
 * gateway runs as an operator runs it: one API process (`ROLE=api`) and one
 * worker process (`ROLE=worker`), both `node dist/src/main.js`; its CPU per
 * task is the utime + stime of both processes over the round.
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npm run bench:throughput
 *   ROUNDS=3 TASKS=300 …     # defaults
 *   PROFILE=dir …            # the worker runs with --cpu-prof into dir
 *   CAPTURE=1 …              # runs one task with log_statement = 'all' on the run's
 *                            # database and prints its statements from the server log
 *                            # (PG_LOG, /var/log/postgresql/postgresql-15-main.log)
 */
import { readFileSync, writeFileSync } from "node:fs"
import { createRequire } from "node:module"
import * as os from "node:os"
import { join } from "node:path"
import { pathToFileURL } from "node:url"
import { startFakeGateway } from "../test/fakes/gateway.ts"
import { movie } from "../test/fakes/media.ts"
import buildIfStale from "../test/support/build.ts"
import { cpuTicks, gatewayInstallation, median, type Server, startProcess, stop, waitReady } from "./servers.ts"
import {
  freePort,
  gitHead,
  machine,
  recordRun,
  RESULTS_MD,
  ROOT,
  round,
  runPgbench,
  sleep,
  withClient
} from "./support.ts"

const ADMIN_TOKEN = "adm_bench_engine_0123456789abcdefghijk"
const UPSTREAM = { modelToken: "sk-bench-upstream-0123456789", resourceKey: "ak_bench-upstream-0123456789" }
const ROUNDS = Number(process.env.ROUNDS ?? 3)
const TASKS = Number(process.env.TASKS ?? 300)
const WARMUP_TASKS = 30
const CLIENTS = 10
/** The engine's poll interval (default 1000 ms): a task's first poll is due one interval after its submit. */
const POLL_INTERVAL_MS = 250
const MODEL = "provy-famS-2.0-480p"
const CHANNEL = "upstream"
const SQL_DIR = join(ROOT, "bench", "engine-throughput")
const PG_LOG = process.env.PG_LOG ?? "/var/log/postgresql/postgresql-15-main.log"
const CLK_TCK = 100

const statFields = (pid: number) => {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
  return stat.slice(stat.lastIndexOf(")") + 2).split(" ")
}

/** The live children of a process (the worker's spawn helper). */
const childPids = (pid: number): Array<number> =>
  readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").trim().split(/\s+/).filter(Boolean).map(Number)

/**
 * CPU in clock ticks of what a process started: its reaped children's
 * (cutime + cstime), and each live child's own and reaped children's. The
 * worker starts ffprobe through its spawn helper (src/runtime/node/SpawnHelper.ts),
 * so the ffprobe runs are the helper's reaped children.
 */
const childTicks = (pid: number): number => {
  const own = statFields(pid)
  return Number(own[13]) + Number(own[14]) + childPids(pid).reduce((sum, child) => {
    const f = statFields(child)
    return sum + Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])
  }, 0)
}

const log = (message: string) => console.log(`[engine-throughput] ${message}`)

/** Runs `f` `n` times from `concurrency` clients at once; `f` is told which client runs it. */
const pool = async (n: number, concurrency: number, f: (i: number, client: number) => Promise<void>) => {
  let next = 0
  await Promise.all(Array.from({ length: Math.min(n, concurrency) }, async (_, client) => {
    while (next < n) await f(next++, client)
  }))
}

const request = async (base: string, path: string, key: string, json: unknown) => {
  const res = await fetch(base + path, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(json)
  })
  return { status: res.status, body: await res.json() as any }
}

/** A gateway process whose output is also watched for a line (the worker's "upstream poller started"). */
const startRole = (role: "api" | "worker", env: Record<string, string>, port: number, profile?: string) => {
  const server = startProcess(
    role,
    [...(profile ? ["--cpu-prof", `--cpu-prof-dir=${profile}`] : []), "dist/src/main.js"],
    { ...env, ROLE: role, PORT: String(port) },
    port,
    log
  )
  const seen: Array<string> = []
  /** Warnings it logged, by message, with their counts (printed after each gateway round). */
  const warnings = new Map<string, number>()
  server.child.stdout!.on("data", (d: Buffer) => {
    const text = d.toString()
    if (text.includes("\"message\":\"upstream poller started\"")) seen.push("poller")
    for (const line of text.split("\n")) {
      if (/"logLevel":"(ERROR|FATAL)"/.test(line)) log(`${role}: ${line.slice(0, 600)}`)
      const warning = /"message":"([^"]*)","logLevel":"WARN"/.exec(line)
      if (warning) warnings.set(warning[1]!, (warnings.get(warning[1]!) ?? 0) + 1)
    }
  })
  return { server, seen, warnings }
}

/** pgbench: `tasks` runs of task.sql over 10 connections; the runs per second (excluding connection time). */
const pgbench = (url: string, defines: Record<string, string>, tasks: number) =>
  runPgbench(url, [
    // A deadlock in the charge (see the RESULTS.md section) is retried, as a client would retry its create.
    "--max-tries=100",
    ...["-c", String(CLIENTS), "-j", "2", "-t", String(Math.ceil(tasks / CLIENTS))],
    ...["-f", join(SQL_DIR, "task.sql")]
  ], defines)

/** What the benchmark uses of graphile-worker (typed here, so the benchmark typechecks without it installed). */
interface GraphileWorker {
  readonly makeWorkerUtils: (options: { connectionString: string }) => Promise<{
    addJobs: (specs: ReadonlyArray<{ identifier: string; payload: unknown }>) => Promise<unknown>
    release: () => Promise<void>
  }>
  readonly run: (options: {
    connectionString: string
    concurrency: number
    noHandleSignals: boolean
    pollInterval: number
    logger: unknown
    taskList: Record<string, (payload: unknown) => Promise<void>>
  }) => Promise<{ stop: () => Promise<void> }>
  readonly Logger: new(factory: () => () => void) => unknown
}

/**
 * graphile-worker (a devDependency), or the copy GRAPHILE_WORKER names (the
 * path of its package folder, for a run before `npm ci`); its rounds are
 * skipped when neither loads.
 */
const loadGraphileWorker = async (): Promise<GraphileWorker | undefined> => {
  const dir = process.env.GRAPHILE_WORKER
  const specifier = dir ? pathToFileURL(createRequire(join(dir, "package.json")).resolve(dir)).href : "graphile-worker"
  try {
    return await import(specifier) as GraphileWorker
  } catch (e) {
    log(`graphile-worker not available (${(e as Error).message.split("\n")[0]}): its rounds are skipped`)
    return undefined
  }
}

/** N no-op jobs added in one call, run by one worker of concurrency 10; jobs per second from the add to the last. */
const graphileRound = async (gw: GraphileWorker, databaseUrl: string, jobs: number) => {
  let done = 0
  let allDone: () => void = () => {}
  const finished = new Promise<void>((ok) => (allDone = ok))
  const utils = await gw.makeWorkerUtils({ connectionString: databaseUrl })
  try {
    const runner = await gw.run({
      connectionString: databaseUrl,
      concurrency: CLIENTS,
      noHandleSignals: true,
      pollInterval: 1000,
      logger: new gw.Logger(() => () => {}),
      taskList: {
        noop: async () => {
          if (++done === jobs) allDone()
        }
      }
    })
    try {
      const t0 = performance.now()
      await utils.addJobs(Array.from({ length: jobs }, (_, i) => ({ identifier: "noop", payload: { i } })))
      await finished
      return jobs / ((performance.now() - t0) / 1000)
    } finally {
      await runner.stop()
    }
  } finally {
    await utils.release()
  }
}

/** The statements the server logged for one database since `from` (a byte offset in the log), one per entry. */
const loggedStatements = (database: string, from: number) => {
  const text = readFileSync(PG_LOG).subarray(from).toString("utf8")
  const entries: Array<string> = []
  let current: string | undefined
  for (const line of text.split("\n")) {
    if (/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d/.test(line)) {
      if (current !== undefined) entries.push(current)
      current = line.includes(`@${database} `) ? line.replace(/^\S+ \S+ \S+ (\[\d+\]) \S+ /, "$1 ") : undefined
    } else if (current !== undefined) current += "\n" + line
  }
  if (current !== undefined) entries.push(current)
  return entries
}

const HEADER = `## engine-throughput

Tasks per second end to end (the engine's target: 0.5x pgbench): ${TASKS} video tasks (\`${MODEL}\`, 4 s) a round,
created through \`POST /v1/video/tasks\` by ${CLIENTS} concurrent clients (an account each), on a
\`gateway\` channel (concurrency above the task count) whose upstream, the fake upstream gateway of
\`test/fakes/gateway.ts\` in the benchmark's process, answers at once: each task is \`succeeded\` at
its first poll, its result a 4 s 240×240 H.264 MP4 (350 kB) the worker downloads, inspects (ffprobe)
and re-hosts. The gateway is \`node dist/src/main.js\` as an operator runs it, two processes: one API
(\`ROLE=api\`) and one worker (\`ROLE=worker\`), on a PostgreSQL database made for the run; rate
limits raised, the engine's poll interval ${POLL_INTERVAL_MS} ms (default 1000: a task's first poll is due
one interval after its submit). A round runs from the first create until the database holds all
${TASKS} tasks \`succeeded\` (the benchmark counts them every 20 ms).

Against it, pgbench with ${CLIENTS} connections running ${TASKS} times the gateway's transactions for
one task (\`bench/engine-throughput/task.sql\`, taken from PostgreSQL's statement log of one task,
\`CAPTURE=1\`: the create with its charge, the claim under the channel's lock, the submit's attempt
rows and the move to waiting, the poller's hold, the answer on the attempt, the completion with its
asset, the account's webhook setting and the event row of the outbox, and both NOTIFYs; each
statement as the gateway sends it, on a channel name of its own so the gateway's idle worker does
not take its tasks; a transaction failing on a deadlock is retried, and counted). As context, not a
target: graphile-worker 0.17's no-op jobs per second on the same database (${TASKS} jobs added in one
call, one worker of concurrency ${CLIENTS}, from the add to the last job's end).

A ${WARMUP_TASKS}-task warm-up of each, then interleaved rounds; rates are the median round. Gateway
CPU per task: utime + stime of the API and worker processes over the gateway rounds; what the worker
starts is given apart: the ffprobe runs, and since the spawn helper (src/runtime/node/SpawnHelper.ts)
the helper process that starts them. Load is the 1-minute load
average at start / end (2 cores, shared with other sessions' work). Target: the gateway at least
0.5× the pgbench sequence.

An account per client, not one for all: with one account, concurrent creates deadlock in the
charge statement while the worker completes that account's tasks (PostgreSQL's \`deadlock detected\`
among the \`WITH account AS (… FOR NO KEY UPDATE), debit AS (UPDATE accounts …)\` statements; the API
answered 500 to 4 creates within the first 30 s on 2026-11-23, and pgbench's copy of the statement
failed 18 of 60 sequences the same way).

Run: \`DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npm run bench:throughput\`.

| Date | Machine | Commit | Rounds | Gateway tasks/s | pgbench sequences/s (retried) | Ratio | graphile-worker jobs/s | Gateway CPU ms/task (API + worker; + child processes) | Load start / end |
|---|---|---|---|---:|---:|---:|---:|---:|---|
`

const main = async () => {
  const serverUrl = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test"
  const capture = process.env.CAPTURE === "1"
  const loadStart = os.loadavg()[0]!
  const cleanups: Array<() => Promise<unknown>> = []
  const servers: Array<Server> = []
  try {
    buildIfStale()
    const fake = await startFakeGateway(UPSTREAM)
    fake.recording = false
    cleanups.push(() => fake.close())
    await movie("240x240", "4")

    const { configDir, dataDir, databaseUrl } = await gatewayInstallation(serverUrl, "engine", (limits) => {
      for (const rate of Object.values(limits.rate_limits) as Array<any>) rate.per_second = rate.burst = 1_000_000
      limits.engine = { ...limits.engine, poll_interval_ms: POLL_INTERVAL_MS }
    }, cleanups)
    const models = JSON.parse(readFileSync(join(configDir, "models.json"), "utf8"))
    models.channels[CHANNEL] = {
      adapter: "gateway",
      base_url: fake.url,
      credentials: { model_token: { env: "UPSTREAM_SK" }, resource_key: { env: "UPSTREAM_AK" } },
      concurrency: 10_000
    }
    models.models[MODEL].channels = [{ channel: CHANNEL, upstream_model: "bench-upstream-video" }]
    writeFileSync(join(configDir, "models.json"), JSON.stringify(models, null, 2))
    const database = new URL(databaseUrl).pathname.slice(1)
    const logFrom = capture ? readFileSync(PG_LOG).byteLength : 0
    if (capture) await withClient(serverUrl, (c) => c.query(`ALTER DATABASE ${database} SET log_statement = 'all'`))

    const port = await freePort()
    const base = `http://127.0.0.1:${port}`
    const env = {
      HOST: "127.0.0.1",
      DATA_DIR: dataDir,
      CONFIG_DIR: configDir,
      DATABASE_URL: databaseUrl,
      ADMIN_TOKEN,
      ENCRYPTION_KEY: "bench-engine-encryption-key-0123456789",
      STORAGE_SIGNING_KEY: "bench-engine-storage-signing-key-0123",
      PUBLIC_BASE_URL: base,
      UPSTREAM_SK: UPSTREAM.modelToken,
      UPSTREAM_AK: UPSTREAM.resourceKey
    }
    const api = startRole("api", env, port)
    servers.push(api.server)
    await waitReady(api.server, "/readyz")
    const worker = startRole("worker", env, await freePort(), process.env.PROFILE)
    servers.push(worker.server)
    for (let i = 0; !worker.seen.includes("poller"); i++) {
      if (worker.server.child.exitCode !== null || i > 900) throw new Error("the worker did not start")
      await sleep(100)
    }
    // An account per client (see the RESULTS.md section: creates of one account deadlock in the charge
    // while its tasks complete), with balances no run can exhaust.
    const accounts = await Promise.all(Array.from({ length: CLIENTS }, async (_, i) => {
      const account = await request(base, "/admin/v1/accounts", ADMIN_TOKEN, {
        name: `bench-${i}`,
        wallet_credits: 1e9
      })
      if (account.status !== 201) throw new Error(`account: ${account.status} ${JSON.stringify(account.body)}`)
      const made = await request(base, `/admin/v1/accounts/${account.body.id}/keys`, ADMIN_TOKEN, { kind: "model" })
      return { id: account.body.id as string, key: made.body.key as string }
    }))
    await withClient(databaseUrl, async (c) => {
      await c.query(`CREATE TABLE bench_accounts (n int PRIMARY KEY, id text NOT NULL)`)
      // pgbench's client n (from 0) charges row n, as the benchmark's client n uses account n.
      for (const [i, a] of accounts.entries()) await c.query(`INSERT INTO bench_accounts VALUES ($1, $2)`, [i, a.id])
    })
    log(`api and worker ready; database ${database}; fake upstream at ${fake.url}`)

    let expected = 0
    /** N tasks created by 10 clients, until all are succeeded; tasks/s and the gateway's CPU ms per task. */
    const gatewayRound = async (n: number) => {
      for (let i = 0; i < n; i++) fake.lives.push({ statuses: ["succeeded"] })
      expected += n
      const ticks = () => cpuTicks(api.server.child.pid!) + cpuTicks(worker.server.child.pid!)
      const before = ticks()
      const childrenBefore = childTicks(worker.server.child.pid!)
      const apiBefore = cpuTicks(api.server.child.pid!)
      const t0 = performance.now()
      await pool(n, CLIENTS, async (i, client) => {
        const reply = await request(base, "/v1/video/tasks", accounts[client]!.key, {
          model: MODEL,
          operation: "generation",
          input: { prompt: `bench task ${expected - n + i}` },
          output: { duration: 4 }
        })
        if (reply.status !== 202) throw new Error(`create: ${reply.status} ${JSON.stringify(reply.body)}`)
      })
      await withClient(databaseUrl, async (c) => {
        for (let polls = 0;; polls++) {
          // The gateway's tasks only: pgbench's rounds write succeeded tasks of their own (channel
          // `pgbench`) into the same table, and counting them ended later rounds early.
          const { rows } = await c.query(
            `SELECT count(*) FILTER (WHERE status = 'succeeded')::int AS ok, count(*) FILTER (WHERE status = 'failed')::int AS failed FROM tasks WHERE channel = $1`,
            [CHANNEL]
          )
          if (rows[0].failed > 0) throw new Error(`${rows[0].failed} tasks failed`)
          if (rows[0].ok >= expected) return
          if (polls > 30_000) throw new Error(`only ${rows[0].ok} of ${expected} tasks succeeded in time`)
          await sleep(20)
        }
      })
      const seconds = (performance.now() - t0) / 1000
      for (const role of [api, worker]) {
        if (role.warnings.size) log(`${role.server.name} warned: ${JSON.stringify(Object.fromEntries(role.warnings))}`)
        role.warnings.clear()
      }
      const cpuMs = ((ticks() - before) * 1000) / CLK_TCK
      const childrenMs = ((childTicks(worker.server.child.pid!) - childrenBefore) * 1000) / CLK_TCK
      return {
        tasksPerS: round(n / seconds, 1),
        seconds: round(seconds, 2),
        cpuMsPerTask: round(cpuMs / n, 2),
        apiCpuMsPerTask: round(((cpuTicks(api.server.child.pid!) - apiBefore) * 1000) / CLK_TCK / n, 2),
        childCpuMsPerTask: round(childrenMs / n, 2)
      }
    }

    if (capture) {
      await gatewayRound(1)
      await sleep(3_000)
      await withClient(serverUrl, (c) => c.query(`ALTER DATABASE ${database} RESET log_statement`))
      for (const entry of loggedStatements(database, logFrom)) console.log(entry + "\n")
      return
    }

    // What pgbench's script writes: the gateway's own rows for one task (bench/engine-throughput/task.sql).
    // A channel name of its own: the gateway's worker, idle meanwhile, must not claim pgbench's tasks.
    const defines = { channel: "pgbench" }

    const gw = await loadGraphileWorker()
    await gatewayRound(WARMUP_TASKS)
    const sample = await withClient(databaseUrl, (c) =>
      c.query(
        `SELECT request::text AS request, charged_wallet_micros + charged_subscription_micros AS micros
         FROM tasks LIMIT 1`
      ))
    Object.assign(defines, {
      request: sample.rows[0].request.replaceAll("'", "''"),
      micros: String(sample.rows[0].micros)
    })
    await pgbench(databaseUrl, defines, WARMUP_TASKS)
    if (gw) await graphileRound(gw, databaseUrl, WARMUP_TASKS)

    const gateway: Array<Awaited<ReturnType<typeof gatewayRound>>> = []
    const pg: Array<{ tps: number; retried: number; unfinishedSoFar: number }> = []
    const graphile: Array<number> = []
    for (let i = 0; i < ROUNDS; i++) {
      const steps: Array<() => Promise<void>> = [
        async () => void gateway.push(await gatewayRound(TASKS)),
        async () => {
          const run = await pgbench(databaseUrl, defines, TASKS)
          // Tasks its passes left waiting (task.sql: a pass that finds none due ends that run of the script).
          const left = await withClient(
            databaseUrl,
            (c) => c.query(`SELECT count(*)::int AS n FROM tasks WHERE channel = 'pgbench' AND status <> 'succeeded'`)
          )
          pg.push({ ...run, unfinishedSoFar: left.rows[0].n as number })
        },
        ...(gw ? [async () => void graphile.push(round(await graphileRound(gw, databaseUrl, TASKS), 1))] : [])
      ]
      for (const step of i % 2 ? steps.reverse() : steps) await step()
      log(
        `round ${i + 1}: gateway ${gateway.at(-1)!.tasksPerS} tasks/s (${gateway.at(-1)!.cpuMsPerTask} ms CPU/task, ` +
          `of which API ${gateway.at(-1)!.apiCpuMsPerTask}, ` +
          `child processes ${gateway.at(-1)!.childCpuMsPerTask}), ` +
          `pgbench ${pg.at(-1)!.tps} /s (${pg.at(-1)!.retried} retried, ${
            pg.at(-1)!.unfinishedSoFar
          } left unfinished so far)${gw ? `, graphile-worker ${graphile.at(-1)} jobs/s` : ""}`
      )
    }
    const gatewayRate = round(median(gateway.map((r) => r.tasksPerS)), 1)
    const pgRate = round(median(pg.map((r) => r.tps)), 1)
    const graphileRate = gw ? round(median(graphile), 1) : undefined
    const cpu = round(gateway.reduce((a, r) => a + r.cpuMsPerTask, 0) / gateway.length, 2)
    const childCpu = round(gateway.reduce((a, r) => a + r.childCpuMsPerTask, 0) / gateway.length, 2)
    const loadEnd = os.loadavg()[0]!
    const m = machine()
    const date = new Date().toISOString().slice(0, 10)
    const commit = (await gitHead())?.slice(0, 7) ?? "?"
    const postgres = await withClient(databaseUrl, (c) => c.query("SHOW server_version")).then((r) =>
      r.rows[0].server_version as string
    )
    const entry = {
      date: new Date().toISOString(),
      machine: { ...m, postgres },
      commit,
      rounds: ROUNDS,
      tasks: TASKS,
      pollIntervalMs: POLL_INTERVAL_MS,
      gateway: { tasksPerS: gatewayRate, cpuMsPerTask: cpu, childCpuMsPerTask: childCpu, perRound: gateway },
      pgbench: { sequencesPerS: pgRate, perRound: pg },
      graphileWorker: gw ? { jobsPerS: graphileRate, perRound: graphile } : null,
      ratio: round(gatewayRate / pgRate, 2),
      load: [loadStart, loadEnd]
    }
    log(JSON.stringify(entry))
    const row = `| ${date} | ${m.cpu}, ${m.cores} cores, node ${m.node}, PostgreSQL ${
      postgres.split(" ")[0]
    } | ${commit} | ${ROUNDS} × ${TASKS} tasks | ${gatewayRate} | ${pgRate} (${
      pg.reduce((a, r) => a + r.retried, 0)
    }) | ${entry.ratio} | ${graphileRate ?? "not run"} | ${cpu}; + ${childCpu} | ${loadStart.toFixed(2)} / ${
      loadEnd.toFixed(2)
    } |`
    const file = recordRun("engine-throughput", date, entry, HEADER, [row])
    log(`wrote ${file} and a row in ${RESULTS_MD}`)
  } finally {
    for (const server of servers.reverse()) await stop(server)
    for (const cleanup of cleanups.reverse()) await cleanup().catch((e) => log(`cleanup: ${e}`))
  }
}

await main()
