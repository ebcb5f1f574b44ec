/**
 * Benchmark, waiting work at scale (docs/performance.md, Waiting work at
 * scale): one worker process (`ROLE=worker`, `node dist/src/main.js`)
 * holding TASKS tasks (100,000) waiting upstream on one channel, in front
 * of the fake Ark in a process of its own (test/fakes/arkProcess.ts: every
 * task stays `running` there, so the load is steady), with a request budget
 * of BUDGET (20) requests a second. Measured over WATCH_S seconds of
 * polling:
 *
 *  - the worker's resident memory and CPU, per poll cycle (every waiting
 *    task polled once: TASKS ÷ the tasks its share of the budget polls a
 *    second) and per second;
 *  - the requests the fake saw: the busiest one-second window and the rate;
 *  - the poll gap (the worker's `mtg_upstream_poll_gap_seconds`) against the
 *    gap the budget allows, waiting ÷ (reads' share × budget × 100 ids);
 *  - the poller's selection (sql/claimWaiting.ts) and the claim of queued
 *    tasks (sql/claimTasks.ts: lock, lanes, plan, claim) with 100 and with
 *    TASKS queued over 10 accounts on another channel, each timed (median
 *    of 20, every one rolled back) and shown with `EXPLAIN ANALYZE`;
 *  - then creates while it polls: CALLERS (8) callers creating CREATES (2,000)
 *    tasks on one account, as a burst would: every answer must be 202, and
 *    until the last is sent upstream the budget holds (the busiest second)
 *    and creates and reads share it (their rates).
 *
 * The tasks are written to the database (and to the fake) directly, as
 * created and submitted long ago: submitting 100,000 through a budget of 20
 * requests a second would take hours. They are real tasks otherwise (their
 * stored request is a create's), and the lanes' counts follow by trigger.
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npx tsx bench/waiting-scale.ts
 *   TASKS=100000 BUDGET=20 WATCH_S=150 CALLERS=8 CREATES=2000 …   # defaults
 *   PROFILE=dir …   # the worker runs with --cpu-prof into dir/worker (the API process into dir)
 */
import { SqlClient, type Statement } from "@effect/sql"
import * as PgClient from "@effect/sql-pg/PgClient"
import { Effect, ManagedRuntime, Redacted } from "effect"
import { readFileSync, writeFileSync } from "node:fs"
import * as os from "node:os"
import { join } from "node:path"
import { planClaims } from "../src/tasks/engine/FairShare.ts"
import { activeLanes, claimPlanned, lockChannel } from "../src/tasks/engine/sql/claimTasks.ts"
import { claimWaiting } from "../src/tasks/engine/sql/claimWaiting.ts"
import { busiest } from "../test/fakes/ark.ts"
import { startArkProcess } from "../test/support/arkProcess.ts"
import { samplesOf } from "../test/support/metrics.ts"
import { cpuTicks, gatewayInstallation, median, startGateway, startProcess, stop } from "./servers.ts"
import { asService, freePort, gitHead, machine, machineLine, recordRun, round, sleep, withClient } from "./support.ts"

const TASKS = Number(process.env.TASKS ?? 100_000)
const BUDGET = Number(process.env.BUDGET ?? 20)
const WATCH_S = Number(process.env.WATCH_S ?? 150)
const CALLERS = Number(process.env.CALLERS ?? 8)
const CREATES = Number(process.env.CREATES ?? 2_000)
const ADMIN_TOKEN = "adm_bench_waiting_0123456789abcdefghij"
const ARK_KEY = "ark-bench-key-0123456789"
const METRICS_TOKEN = "mtk_bench_waiting_0123456789abcdef"
const MODEL = "provy-famS-2.0-480p"
const CHANNEL = "ark"
/** Ark's list carries 100 ids a request (channels/ark); reads keep 1 − create_share (0.2) of the budget. */
const IDS_PER_REQUEST = 100
const READS_SHARE = 0.8
const CLK_TCK = 100

const log = (message: string) => console.log(`[waiting-scale] ${message}`)

const rssMiB = (pid: number) => {
  const line = readFileSync(`/proc/${pid}/status`, "utf8").split("\n").find((l) => l.startsWith("VmRSS:"))!
  return Number(line.split(/\s+/)[1]) / 1024
}

/** A statement's plan as PostgreSQL ran it, in a transaction rolled back afterwards (the statement may write). */
const explain = (url: string, statement: Statement.Statement<unknown>) =>
  withClient(url, async (c) => {
    const [text, params] = statement.compile()
    await c.query("BEGIN")
    try {
      const rows = await c.query(`EXPLAIN (ANALYZE, BUFFERS, TIMING) ${text}`, params as Array<unknown>)
      return rows.rows.map((r) => r["QUERY PLAN"]).join("\n")
    } finally {
      await c.query("ROLLBACK")
    }
  })

const main = async () => {
  const serverUrl = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test"
  const loadStart = os.loadavg()
  const cleanups: Array<() => Promise<unknown>> = []
  try {
    const ark = await startArkProcess([ARK_KEY], [])
    cleanups.push(() => ark.close())
    const install = await gatewayInstallation(serverUrl, "waiting", (limits) => {
      for (const rate of Object.values(limits.rate_limits) as Array<any>) rate.per_second = rate.burst = 100_000
    }, cleanups)
    const models = JSON.parse(readFileSync(join(install.configDir, "models.json"), "utf8"))
    models.channels[CHANNEL] = {
      adapter: "ark",
      base_url: ark.url,
      credentials: { api_key: { env: "ARK_KEY" } },
      concurrency: 1_000_000,
      requests_per_second: BUDGET
    }
    models.models[MODEL].channels = [{ channel: CHANNEL, upstream_model: "seedance-1-0-lite-t2v-250428" }]
    writeFileSync(join(install.configDir, "models.json"), JSON.stringify(models, null, 2))
    const env = {
      DATABASE_URL: install.databaseUrl,
      CONFIG_DIR: install.configDir,
      DATA_DIR: install.dataDir,
      ARK_KEY,
      METRICS_TOKEN,
      ALLOW_PRIVATE_TARGETS: "true"
    }
    const api = await startGateway({ ...env, ROLE: "api" }, ADMIN_TOKEN, cleanups, log)
    const account = await api.admin("/admin/v1/accounts", { name: "bench", wallet_credits: 1e8 })
    const key = (await api.admin(`/admin/v1/accounts/${account.id}/keys`, { kind: "model" })).key as string
    const create = async (prompt: string) => {
      const res = await fetch(`${api.gateway.url}/v1/video/tasks`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({ model: MODEL, operation: "generation", input: { prompt }, output: { duration: 5 } })
      })
      await res.arrayBuffer()
      return res.status
    }
    // One create through the API, for a stored request as the engine reads it; the seeds copy it.
    if ((await create("the seed's request")) !== 202) throw new Error("the first create was refused")

    log(`seeding ${TASKS} waiting tasks`)
    const seeded = Date.now()
    await withClient(install.databaseUrl, async (c) => {
      const nowS = Math.floor(seeded / 1000)
      // Row by row the counting triggers would update one lane and one day 100,000 times in one statement;
      // the seed goes in without them, and the counts they keep are written once from what was seeded.
      await c.query("SET session_replication_role = replica")
      await c.query(
        `
        INSERT INTO tasks (id, account_id, kind, model, operation, status, progress, request, request_version, created_at,
          updated_at, started_at, channel, attempt, run_state, run_at, upstream_id, upstream_model, submitted_at,
          charged_wallet_micros)
        SELECT 'task_bench' || g, $1, 'video', $2, 'generation', 'in_progress', 10, s.request, s.request_version,
          $3 - 600, $3, $3 - 600, $4, 1, 'waiting', $5::bigint + (g % 1000), 'cgt-bench-' || g, 'seedance-1-0-lite-t2v-250428',
          $5::bigint - 600000, 250000
        FROM generate_series(1, $6::int) g, (SELECT request, request_version FROM tasks LIMIT 1) s`,
        [account.id, MODEL, nowS, CHANNEL, seeded, TASKS]
      )
      await c.query(`
        INSERT INTO task_attempts (task_id, attempt, channel, upstream_id, outcome, created_at, updated_at)
        SELECT id, 1, channel, upstream_id, 'waiting', created_at, created_at FROM tasks WHERE id LIKE 'task_bench%'`)
      await c.query("SET session_replication_role = DEFAULT")
      await c.query(
        `
        INSERT INTO task_lanes (channel, account_id, in_flight, started_at)
        SELECT channel, account_id, count(*), $1::bigint FROM tasks WHERE id LIKE 'task_bench%' GROUP BY 1, 2
        ON CONFLICT (channel, account_id) DO UPDATE SET in_flight = task_lanes.in_flight + EXCLUDED.in_flight`,
        [seeded]
      )
      await c.query(`
        INSERT INTO usage_daily (day, account_id, model, channel, tasks, charged_micros)
        SELECT (created_at / 86400)::integer, account_id, model, channel, count(*), sum(charged_wallet_micros)
        FROM tasks WHERE id LIKE 'task_bench%' GROUP BY 1, 2, 3, 4
        ON CONFLICT (day, account_id, model, channel) DO UPDATE
          SET tasks = usage_daily.tasks + EXCLUDED.tasks,
            charged_micros = usage_daily.charged_micros + EXCLUDED.charged_micros`)
      await c.query("ANALYZE tasks")
    })
    for (let from = 1; from <= TASKS; from += 10_000) {
      const ids = Array.from({ length: Math.min(10_000, TASKS - from + 1) }, (_, i) => `cgt-bench-${from + i}`)
      await ark.seed(ids, ARK_KEY, { queued: 1e9 }, { model: "seedance-1-0-lite-t2v-250428", content: [] })
    }
    log(`seeded in ${round((Date.now() - seeded) / 1000)} s`)

    // The worker, and what it costs while it polls them.
    const opsPort = await freePort()
    const worker = startProcess(
      "worker",
      [
        ...(process.env.HEAP_SNAPSHOT ? ["--heapsnapshot-signal=SIGUSR1", "--expose-gc"] : []),
        ...(process.env.PROFILE ? ["--cpu-prof", `--cpu-prof-dir=${join(process.env.PROFILE, "worker")}`] : []),
        "dist/src/main.js"
      ],
      { ...env, ROLE: "worker", OPS_PORT: String(opsPort), ADMIN_TOKEN },
      opsPort,
      log
    )
    cleanups.unshift(() => stop(worker))
    const pid = worker.child.pid!
    await sleep(15_000) // its start and its first passes, outside the window measured
    const requestsBefore = (await ark.requestTimes()).length
    const ticks0 = cpuTicks(pid)
    const rss: Array<number> = []
    const t0 = Date.now()

    // Polling alone first: its memory, CPU, requests and poll gap, with nothing else asking the budget.
    while (Date.now() - t0 < WATCH_S * 1000) {
      rss.push(rssMiB(pid))
      await sleep(5_000)
    }
    // HEAP_SNAPSHOT=1: the worker writes a heap snapshot (Heap-*.heapsnapshot in the repository), to see what holds memory.
    if (process.env.HEAP_SNAPSHOT) {
      worker.child.kill("SIGUSR1")
      await sleep(20_000)
    }
    const seconds = (Date.now() - t0) / 1000
    const cpuSeconds = (cpuTicks(pid) - ticks0) / CLK_TCK
    const metrics = await fetch(`http://127.0.0.1:${opsPort}/metrics`, {
      headers: { authorization: `Bearer ${METRICS_TOKEN}` }
    })
    const samples = samplesOf(await metrics.text())
    // Times only: a snapshot carries the fake's 100,000 tasks, and the fake, busy sending them, would stamp the
    // requests it kept waiting together.
    const allTimes = await ark.requestTimes()
    const times = allTimes.slice(requestsBefore)
    const windowBusiest = busiest(times, 1000)
    const rate = times.length / seconds
    log(`polling alone: ${times.length} requests in ${round(seconds)} s, busiest second ${windowBusiest.count}`)

    // Then creates of one account from several callers while it polls: none may fail, and the budget holds.
    const burstFrom = allTimes.length
    const createsBefore = await ark.creates()
    const burstStarted = Date.now()
    const statuses: Array<number> = []
    let next = 0
    await Promise.all(Array.from({ length: CALLERS }, async () => {
      while (next < CREATES) statuses.push(await create(`burst ${next++}`))
    }))
    // The creates answered are queued: the burst's window runs until the worker sent the last of them upstream.
    while ((await ark.creates()) < createsBefore + CREATES && Date.now() - burstStarted < 30 * 60_000) {
      await sleep(2_000)
    }
    const sentAll = (await ark.snapshot()).requests.slice(burstFrom)
    const lastCreate = Math.max(...sentAll.filter((r) => r.method === "POST").map((r) => r.at))
    const burst = sentAll.filter((r) => r.at <= lastCreate)
    const burstSeconds = (Math.max(...burst.map((r) => r.at)) - burstStarted) / 1000
    const burstBusiest = busiest(burst.map((r) => r.at), 1000)
    const inBusiest = burst.filter((r) => r.at >= burstBusiest.from && r.at < burstBusiest.from + 1000)
    const counts = new Map<string, number>()
    for (const r of inBusiest) {
      const kind = `${r.method} ${r.path.replace(/cgt-[\w-]+/, ":id")}`
      counts.set(kind, (counts.get(kind) ?? 0) + 1)
    }
    const burstCreates = burst.filter((r) => r.method === "POST").length
    log(
      `the burst: ${burstCreates} creates and ${burst.length - burstCreates} reads upstream in ${
        round(burstSeconds)
      } s; busiest second ${burstBusiest.count} (${[...counts].map(([kind, n]) => `${kind}: ${n}`).join(", ")})`
    )
    if (!samples.some((s) => s.name === "mtg_upstream_poll_gap_seconds_count")) {
      log(
        `no poll gap in the worker's metrics (${metrics.status}): ${[...new Set(samples.map((s) => s.name))].join(" ")}`
      )
    }
    const gapSum = samples.find((s) => s.name === "mtg_upstream_poll_gap_seconds_sum")?.value ?? 0
    const gapCount = samples.find((s) => s.name === "mtg_upstream_poll_gap_seconds_count")?.value ?? 0
    const pollsPerSecond = READS_SHARE * BUDGET * IDS_PER_REQUEST
    const cycleS = TASKS / pollsPerSecond

    // The statements at this size, through the service's own modules, on connections set up as the service's.
    const serviceUrl = asService(install.databaseUrl)
    const runtime = ManagedRuntime.make(PgClient.layer({ url: Redacted.make(serviceUrl), maxConnections: 2 }))
    cleanups.unshift(() => runtime.dispose())
    const sqlOf = await runtime.runPromise(SqlClient.SqlClient)
    const selection = await explain(
      serviceUrl,
      claimWaiting(sqlOf, { channel: CHANNEL, limit: 500, now: Date.now() + 3_600_000, holdMs: 60_000 })
    )

    // Queued tasks of 10 accounts on a channel no worker serves, 100 then TASKS: the claim's cost at each size.
    const claimAt = async (queued: number) => {
      await withClient(install.databaseUrl, async (c) => {
        // Without the counting triggers, as the seed above; the channel's lanes written from what is there.
        await c.query("SET session_replication_role = replica")
        await c.query(`DELETE FROM tasks WHERE channel = 'bench-queue'`)
        await c.query(`DELETE FROM task_lanes WHERE channel = 'bench-queue'`)
        await c.query(
          `
          INSERT INTO tasks (id, account_id, kind, model, operation, status, request, created_at, updated_at, channel,
            run_state)
          SELECT 'task_q' || g, 'acct_q' || (g % 10), 'video', $1, 'generation', 'queued', '{}'::jsonb, 0, 0,
            'bench-queue', 'available'
          FROM generate_series(1, $2::int) g`,
          [MODEL, queued]
        )
        await c.query("SET session_replication_role = DEFAULT")
        await c.query(`
          INSERT INTO task_lanes (channel, account_id, queued)
          SELECT channel, account_id, count(*) FROM tasks WHERE channel = 'bench-queue' GROUP BY 1, 2`)
        await c.query(`ANALYZE tasks`)
      })
      const shares = { by: "account" as const, weightOf: () => 1, capOf: () => undefined }
      const once = Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const started = performance.now()
        yield* Effect.gen(function*() {
          yield* lockChannel(sql, "bench-queue")
          const lanes = (yield* activeLanes(sql, "bench-queue")).map((l) => ({
            account: l.account_id,
            group: l.group_name,
            queued: Number(l.queued),
            inFlight: Number(l.in_flight),
            served: 0,
            oldest: l.oldest === null ? null : Number(l.oldest)
          }))
          yield* claimPlanned(
            sql,
            { channel: "bench-queue", workerId: "bench", now: Date.now(), leaseMs: 60_000 },
            planClaims(lanes, 10, shares)
          )
          return yield* Effect.fail("rolled back" as const)
        }).pipe(sql.withTransaction, Effect.ignore)
        return performance.now() - started
      })
      const ms: Array<number> = []
      for (let i = 0; i < 20; i++) ms.push(await runtime.runPromise(once))
      const lanesPlan = await explain(serviceUrl, activeLanes(sqlOf, "bench-queue"))
      const claimPlan = await explain(
        serviceUrl,
        claimPlanned(sqlOf, { channel: "bench-queue", workerId: "bench", now: Date.now(), leaseMs: 60_000 }, [
          { account: "acct_q1", n: 5 },
          { account: "acct_q2", n: 5 }
        ])
      )
      return { queued, medianMs: round(median(ms), 2), lanesPlan, claimPlan }
    }
    // The tasks of the accounts the bench made have no `accounts` row: the lanes' join needs them.
    await withClient(
      install.databaseUrl,
      (c) =>
        c.query(`INSERT INTO accounts (id, name, group_name, created_at, updated_at)
        SELECT 'acct_q' || g, 'bench ' || g, 'default', 0, 0 FROM generate_series(0, 9) g`)
    )
    const small = await claimAt(100)
    const large = await claimAt(TASKS)

    const loadEnd = os.loadavg()
    const failedCreates = statuses.filter((s) => s !== 202)
    const result = {
      date: new Date().toISOString().slice(0, 10),
      machine: machine(),
      commit: (await gitHead())?.slice(0, 7) ?? null,
      load: { start: loadStart.map((l) => round(l, 2)), end: loadEnd.map((l) => round(l, 2)) },
      tasks: TASKS,
      budget: BUDGET,
      watchedSeconds: round(seconds),
      rssMiB: { min: round(Math.min(...rss)), max: round(Math.max(...rss)) },
      cpu: {
        perSecondPercent: round(100 * cpuSeconds / seconds),
        perCycleSeconds: round(cpuSeconds / (seconds / cycleS), 2)
      },
      requests: { busiestSecond: windowBusiest.count, perSecond: round(rate, 2) },
      pollGap: { meanSeconds: gapCount === 0 ? null : round(gapSum / gapCount, 1), budgetSeconds: round(cycleS, 1) },
      creates: {
        total: statuses.length,
        notAccepted: failedCreates.length,
        busiestSecond: burstBusiest.count,
        createsPerSecond: round(burstCreates / burstSeconds, 2),
        readsPerSecond: round((burst.length - burstCreates) / burstSeconds, 2)
      },
      claim: { at100: small.medianMs, atTasks: large.medianMs, ratio: round(large.medianMs / small.medianMs, 2) },
      plans: { selection, lanes: large.lanesPlan, claim: large.claimPlan }
    }
    log(JSON.stringify({ ...result, plans: undefined }, null, 2))
    const jsonFile = recordRun(
      "waiting-scale",
      result.date,
      result,
      HEADER,
      [
        `| ${result.date} | ${machineLine()} | ${result.commit} | ${TASKS} | ${BUDGET} | ${result.rssMiB.min}–${result.rssMiB.max} | ${result.cpu.perSecondPercent} % / ${result.cpu.perCycleSeconds} s | ${windowBusiest.count} / ${result.requests.perSecond} | ${result.pollGap.meanSeconds} / ${result.pollGap.budgetSeconds} | ${small.medianMs} / ${large.medianMs} | ${result.creates.total} / ${result.creates.notAccepted} (busiest 1 s ${burstBusiest.count}; ${result.creates.createsPerSecond} creates + ${result.creates.readsPerSecond} reads /s) | ${
          result.load.start[0]
        } / ${result.load.end[0]} |`
      ]
    )
    log(`recorded in ${jsonFile} (with the EXPLAIN ANALYZE plans) and bench/RESULTS.md`)
    if (failedCreates.length > 0) throw new Error(`${failedCreates.length} creates were not accepted: ${failedCreates}`)
  } finally {
    for (const cleanup of cleanups) await cleanup().catch((e) => log(`cleanup: ${e}`))
  }
}

const HEADER = `## waiting-scale

One worker process (\`ROLE=worker\`, compiled) holding N tasks waiting on one channel in front of the fake Ark
in a process of its own (every task stays \`running\` there), with a request budget of B requests a second.
Polling alone first, for the window: RSS of the worker (min–max); its CPU as a share of one core and per
poll cycle (every waiting task polled once); the fake's busiest one-second window and its rate of requests;
the mean poll gap (\`mtg_upstream_poll_gap_seconds\`) against the cycle the budget allows
(N ÷ (0.8 × B × 100 ids)). The claim (lock, lanes, plan, claim; median of 20, rolled back) with 100 and N
tasks queued over 10 accounts on another channel. Then creates of one account from 8 callers while it polls
(rows before 2026-11-29's last: during the window): how many were not 202, and until the last went
upstream the busiest second and the creates' and reads' rates; load
average (1 min) at start / end. The \`EXPLAIN ANALYZE\` plans of the poll selection and of the claim's two
statements are in the run's JSON file (\`bench/results/waiting-scale-<date>.json\`).

Run: \`DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npx tsx bench/waiting-scale.ts\`.

| Date | Machine | Commit | Waiting | Budget/s | RSS MiB | CPU: of a core / per cycle | Requests: busiest 1 s / per s | Poll gap s: mean / cycle | Claim ms: 100 / N queued | Creates / not 202 | Load start / end |
|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|
`

await main()
