/**
 * Benchmark: tasks waiting on an upstream, as an operator runs the service
 * (docs/performance.md, Waiting on upstreams): 1,000 video tasks on a `gateway`
 * channel whose upstream is the fake upstream gateway (test/fakes/gateway.ts,
 * in this process) answering every request 50 ms late; one API process and one
 * worker process of the gateway on PostgreSQL.
 *
 *   DATABASE_URL=postgres://… npm run bench:polling
 *
 * Creates (and drops) a database of its own on that server. Each upstream
 * task finishes a set time after its create (spread evenly over
 * SETTINGS.readyAfterMs), whoever polls it. Measures:
 *  1. the gaps between two polls of a task while it waits, from the fake's
 *     log of the batch queries naming each upstream id (target: at most
 *     30 s);
 *  2. the delay from a task's completion upstream to the time the bench,
 *     asking the API's batch query every 250 ms, first sees it `succeeded`
 *     (target: p95 under 5 s).
 *
 * Writes bench/results/polling-<date>.json (one entry per run of that day)
 * and adds rows to the "polling" section of bench/RESULTS.md.
 */
import { randomBytes } from "node:crypto"
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import * as os from "node:os"
import { join } from "node:path"
import { startFakeGateway } from "../test/fakes/gateway.ts"
import { addRows } from "./markdown.ts"
import { eachLine, type Server, startProcess, stop, waitReady } from "./servers.ts"
import {
  freePort,
  gitHead,
  machine,
  percentile,
  RESULTS_DIR,
  RESULTS_MD,
  ROOT,
  round,
  sleep,
  withClient,
  withDatabase
} from "./support.ts"

const ADMIN_TOKEN = "adm_bench_polling_0123456789abcdefghij"
const UPSTREAM = { modelToken: "sk-bench-upstream-0123456789", resourceKey: "ak_bench-upstream-0123456789" }
const MODEL = "provy-famS-2.0-480p"
const SETTINGS = {
  model: MODEL,
  tasks: 1000,
  createConcurrency: 8,
  upstreamLatencyMs: 50,
  /** Each upstream task succeeds this long after its create, spread evenly over the range. */
  readyAfterMs: [45_000, 165_000] as const,
  /** How often the bench asks the API (batch query) about tasks finished upstream and not yet seen. */
  observeEveryMs: 250,
  targetMaxGapMs: 30_000,
  targetP95VisibleMs: 5_000
} as const
const DEADLINE_MS = 600_000

const log = (message: string) => console.log(`[bench] ${message}`)

const summary = (values: ReadonlyArray<number>) => {
  const sorted = [...values].sort((a, b) => a - b)
  return {
    n: sorted.length,
    p50: percentile(sorted, 50),
    p95: percentile(sorted, 95),
    max: sorted.at(-1) ?? NaN
  }
}

/** Runs `f` `n` times with at most `concurrency` at once; results in call order. */
const pool = async <A>(n: number, concurrency: number, f: (i: number) => Promise<A>): Promise<Array<A>> => {
  const out: Array<A> = new Array(n)
  let next = 0
  await Promise.all(Array.from({ length: Math.min(n, concurrency) }, async () => {
    while (next < n) {
      const i = next++
      out[i] = await f(i)
    }
  }))
  return out
}

// ---------------------------------------------------------------------------
// The service as processes

interface Proc {
  readonly name: string
  readonly server: Server
  /** Warnings and errors it logged (the first 50), and its last lines. */
  readonly notable: Array<string>
  readonly tail: Array<string>
  started: boolean
}

/** `node --import tsx src/main.ts` (bench/servers.ts), its lines kept as they come. */
const startService = (name: string, env: Record<string, string>, port: number): Proc => {
  const server = startProcess(name, ["--import", "tsx", "src/main.ts"], env, port, log)
  const proc: Proc = { name, server, notable: [], tail: [], started: false }
  eachLine(server.child, (line, label) => {
    proc.tail.push(`${label}: ${line.slice(0, 1000)}`)
    if (proc.tail.length > 30) proc.tail.shift()
    if (line.includes("\"message\":\"upstream poller started\"")) proc.started = true
    if (label === "stderr" || /"logLevel":"(WARN|ERROR|FATAL)"/.test(line)) {
      if (proc.notable.length < 50) proc.notable.push(`${label}: ${line.slice(0, 2000)}`)
    }
  })
  return proc
}

const until = async (what: string, ok: () => boolean | Promise<boolean>, timeoutMs = 120_000) => {
  const end = Date.now() + timeoutMs
  while (!(await ok())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await sleep(100)
  }
}

// ---------------------------------------------------------------------------
// HTTP

const request = async (base: string, method: string, path: string, key: string, json?: unknown) => {
  const res = await fetch(base + path, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(json === undefined ? {} : { "content-type": "application/json" }) },
    ...(json === undefined ? {} : { body: JSON.stringify(json) })
  })
  return { status: res.status, body: await res.json() as any }
}

const createAccount = async (base: string) => {
  const account = await request(base, "POST", "/admin/v1/accounts", ADMIN_TOKEN, {
    name: "bench",
    wallet_credits: 100_000
  })
  if (account.status !== 201) throw new Error(`account: ${account.status} ${JSON.stringify(account.body)}`)
  const key = async (kind: string) => {
    const made = await request(base, "POST", `/admin/v1/accounts/${account.body.id}/keys`, ADMIN_TOKEN, { kind })
    if (made.status !== 201) throw new Error(`key: ${made.status} ${JSON.stringify(made.body)}`)
    return made.body.key as string
  }
  return { model: await key("model"), resource: await key("resource") }
}

// ---------------------------------------------------------------------------
// Report

const SECTION = `## polling

Tasks waiting on an upstream: ${SETTINGS.tasks} video tasks (\`${MODEL}\`) on a
\`gateway\` channel (concurrency above the task count) whose upstream is the
fake upstream gateway (\`test/fakes/gateway.ts\`, in the benchmark's process),
answering every request ${SETTINGS.upstreamLatencyMs} ms late. One API process (\`ROLE=api\`) and
one worker process (\`ROLE=worker\`, engine timing at its defaults) on a
PostgreSQL database created for the run.

- Each upstream task succeeds a set time after its create, spread evenly over
  ${SETTINGS.readyAfterMs[0] / 1000}–${SETTINGS.readyAfterMs[1] / 1000} s, whoever polls it; its
  result is a 4 s 240×240 H.264 MP4 the worker downloads, inspects (ffprobe) and
  re-hosts.
- Poll gap: the time between two batch queries naming the same upstream id
  (the fake logs each query's arrival per id), from a task's first poll to the
  one that saw it succeeded. Target: at most ${SETTINGS.targetMaxGapMs / 1000} s.
- Completion → visible: from the task's completion upstream to the first time
  the benchmark, asking the API's batch query every ${SETTINGS.observeEveryMs} ms about tasks done
  upstream and not yet seen, reads it \`succeeded\` (so up to that much late).
  Target: p95 under ${SETTINGS.targetP95VisibleMs / 1000} s.
- The machine's 1-minute load average at the start and the end of the run is
  recorded: other work on the machine skews every figure here.

Run: \`DATABASE_URL=postgres://… npm run bench:polling\`. Each run adds a row here
and an entry to \`bench/results/polling-<date>.json\`.

| Date | Machine | Commit | Load 1 min start / end | Tasks ok | Poll gap p50 / p95 / max s | Tasks with a gap > 30 s | Completion → visible p50 / p95 / max s |
|---|---|---|---|---:|---:|---:|---:|
`

// ---------------------------------------------------------------------------
// Main

const main = async () => {
  const startedAt = new Date()
  const loadAtStart = os.loadavg()
  const serverUrl = process.env.DATABASE_URL
  if (!serverUrl) {
    console.error("[bench] DATABASE_URL must point at a PostgreSQL server (a database is created for the run)")
    process.exitCode = 2
    return
  }
  const cleanups: Array<() => Promise<unknown> | unknown> = []
  const procs: Array<Proc> = []
  let failure: unknown = undefined
  try {
    const fake = await startFakeGateway(UPSTREAM)
    fake.recording = false
    fake.latencyMs = SETTINGS.upstreamLatencyMs
    cleanups.push(() => fake.close())

    const dataDir = mkdtempSync(join(os.tmpdir(), "gw-bench-polling-"))
    const configDir = mkdtempSync(join(os.tmpdir(), "gw-bench-polling-config-"))
    cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }))
    cleanups.push(() => rmSync(configDir, { recursive: true, force: true }))
    writeFileSync(join(configDir, "groups.json"), readFileSync(join(ROOT, "config", "groups.json")))
    const limits = JSON.parse(readFileSync(join(ROOT, "config", "limits.json"), "utf8"))
    for (const rate of Object.values(limits.rate_limits) as Array<any>) rate.per_second = rate.burst = 1_000_000
    writeFileSync(join(configDir, "limits.json"), JSON.stringify(limits, null, 2))
    const models = JSON.parse(readFileSync(join(ROOT, "config", "models.json"), "utf8"))
    models.channels.upstream = {
      adapter: "gateway",
      base_url: fake.url,
      credentials: { model_token: { env: "UPSTREAM_SK" }, resource_key: { env: "UPSTREAM_AK" } },
      concurrency: SETTINGS.tasks * 2
    }
    models.models[MODEL].channels = [{ channel: "upstream", upstream_model: "bench-upstream-video" }]
    writeFileSync(join(configDir, "models.json"), JSON.stringify(models, null, 2))

    const name = `bench_polling_${Date.now().toString(36)}_${randomBytes(4).toString("hex")}`
    await withClient(serverUrl, (c) => c.query(`CREATE DATABASE ${name}`))
    const databaseUrl = withDatabase(serverUrl, name)
    cleanups.push(() => withClient(serverUrl, (c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)))
    const postgres = await withClient(databaseUrl, (c) => c.query("SHOW server_version")).then((r) =>
      r.rows[0].server_version
    )
    log(`database ${name} (PostgreSQL ${postgres}); fake upstream at ${fake.url}`)

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
      ENCRYPTION_KEY: "bench-polling-encryption-key",
      STORAGE_SIGNING_KEY: "bench-polling-storage-signing-key",
      PUBLIC_BASE_URL: base,
      UPSTREAM_SK: UPSTREAM.modelToken,
      UPSTREAM_AK: UPSTREAM.resourceKey
    })
    const api = startService("api", env("api"), port)
    procs.push(api)
    await waitReady(api.server, "/healthz")
    const worker = startService("worker", env("worker"), port)
    procs.push(worker)
    await until("the worker's poller", () => worker.started)
    const keys = await createAccount(base)
    log("api and worker ready")

    // Each task's life is queued under its prompt before the create, so it is the one its upstream task takes.
    const [lo, hi] = SETTINGS.readyAfterMs
    for (let i = 0; i < SETTINGS.tasks; i++) {
      fake.lives.push({ prompt: `bench task ${i}`, readyAfterMs: lo + ((hi - lo) * i) / (SETTINGS.tasks - 1) })
    }
    const t0 = Date.now()
    const ids = await pool(SETTINGS.tasks, SETTINGS.createConcurrency, async (i) => {
      const reply = await request(base, "POST", "/v1/video/tasks", keys.model, {
        model: MODEL,
        operation: "generation",
        input: { prompt: `bench task ${i}` },
        output: { duration: 4 }
      })
      if (reply.status !== 202) throw new Error(`create: ${reply.status} ${JSON.stringify(reply.body)}`)
      return reply.body.id as string
    })
    log(`${ids.length} tasks created in ${round((Date.now() - t0) / 1000, 1)} s`)

    // Our task id is the upstream's client_reference_id: the bench maps each upstream task back to it.
    const upstreamOf = new Map<string, { id: string; readyAt: number }>()
    const seenAt = new Map<string, { status: string; at: number }>()
    const end = Date.now() + DEADLINE_MS
    while (seenAt.size < ids.length) {
      if (Date.now() > end) throw new Error(`only ${seenAt.size} of ${ids.length} tasks ended in time`)
      const now = Date.now()
      for (const task of fake.tasks.values()) {
        const ours = String(task.fields.client_reference_id)
        if (!upstreamOf.has(ours)) {
          upstreamOf.set(ours, { id: task.id, readyAt: task.createdAt + task.life.readyAfterMs! })
        }
      }
      const due = ids.filter((id) => !seenAt.has(id) && (upstreamOf.get(id)?.readyAt ?? Infinity) <= now)
      for (let i = 0; i < due.length; i += 100) {
        const reply = await request(base, "POST", "/v1/video/tasks/query", keys.resource, {
          task_ids: due.slice(i, i + 100)
        })
        if (reply.status !== 200) throw new Error(`query: ${reply.status} ${JSON.stringify(reply.body)}`)
        const at = Date.now()
        for (const task of reply.body.data as Array<{ id: string; status: string }>) {
          if (task.status === "succeeded" || task.status === "failed") seenAt.set(task.id, { status: task.status, at })
        }
      }
      await sleep(SETTINGS.observeEveryMs)
    }
    const seconds = (ms: number) => round(ms / 1000, 2)
    log(`all ${ids.length} tasks ended ${seconds(Date.now() - t0)} s after the first create`)

    const problems: Array<string> = []
    const maxGaps: Array<number> = []
    const allGaps: Array<number> = []
    const visible: Array<number> = []
    for (const id of ids) {
      const upstream = upstreamOf.get(id)!
      const seen = seenAt.get(id)!
      if (seen.status !== "succeeded") problems.push(`${id}: ${seen.status}`)
      const polls = fake.polls.get(upstream.id) ?? []
      // The polls while it waited: up to the first at or after its completion (the one that saw it).
      const seeing = polls.findIndex((t) => t >= upstream.readyAt)
      const waiting = seeing < 0 ? polls : polls.slice(0, seeing + 1)
      const gaps = waiting.slice(1).map((t, i) => t - waiting[i]!)
      allGaps.push(...gaps)
      maxGaps.push(Math.max(0, ...gaps))
      visible.push(seen.at - upstream.readyAt)
    }
    const gapsS = { all: summary(allGaps.map(seconds)), perTaskMax: summary(maxGaps.map(seconds)) }
    const visibleS = summary(visible.map(seconds))
    const over = maxGaps.filter((g) => g > SETTINGS.targetMaxGapMs).length
    log(`poll gap p50 ${gapsS.all.p50} s, p95 ${gapsS.all.p95} s, max ${gapsS.all.max} s; ${over} tasks over 30 s`)
    log(`completion → visible p50 ${visibleS.p50} s, p95 ${visibleS.p95} s, max ${visibleS.max} s`)
    for (const p of procs) {
      for (const line of p.notable) if (!line.includes("\"logLevel\":\"WARN\"")) problems.push(`${p.name}: ${line}`)
    }

    const m = machine()
    const loadAtEnd = os.loadavg()
    const commit = await gitHead()
    const entry = {
      benchmark: "polling",
      date: startedAt.toISOString(),
      commit,
      machine: { ...m, postgres },
      loadAverage: { atStart: loadAtStart.map((l) => round(l, 2)), atEnd: loadAtEnd.map((l) => round(l, 2)) },
      settings: SETTINGS,
      tasksSucceeded: ids.length - problems.filter((p) => p.startsWith("task_")).length,
      pollGapS: gapsS,
      tasksWithGapOver30s: over,
      completionToVisibleS: visibleS,
      meetsTargets: gapsS.all.max <= SETTINGS.targetMaxGapMs / 1000 &&
        visibleS.p95 < SETTINGS.targetP95VisibleMs / 1000,
      workerWarnings: worker.notable.length,
      problems
    }
    const day = startedAt.toISOString().slice(0, 10)
    mkdirSync(RESULTS_DIR, { recursive: true })
    const file = join(RESULTS_DIR, `polling-${day}.json`)
    const previous = existsSync(file) ? JSON.parse(readFileSync(file, "utf8")) : { runs: [] }
    previous.runs.push(entry)
    writeFileSync(file, JSON.stringify(previous, null, 2) + "\n")

    const machineText = `${m.cpu}, ${m.cores} cores, ${m.memoryGiB} GiB, node ${m.node}, PostgreSQL ${postgres}`
    const triple = (s: ReturnType<typeof summary>) => `${s.p50} / ${s.p95} / ${s.max}`
    const row = [
      day,
      machineText,
      (commit ?? "unknown").slice(0, 7),
      `${round(loadAtStart[0]!, 2)} / ${round(loadAtEnd[0]!, 2)}`,
      `${entry.tasksSucceeded} / ${ids.length}`,
      triple(gapsS.all),
      String(over),
      triple(visibleS)
    ]
    writeFileSync(RESULTS_MD, addRows(readFileSync(RESULTS_MD, "utf8"), "polling", SECTION, [`| ${row.join(" | ")} |`]))
    console.log(JSON.stringify({ ...entry, problems: problems.slice(0, 20) }, null, 2))
    log(`wrote ${file} and a row in ${RESULTS_MD}`)
    if (problems.length) throw new Error(`benchmark checks failed:\n  ${problems.slice(0, 20).join("\n  ")}`)
  } catch (e) {
    failure = e
  } finally {
    await Promise.all(procs.map((p) => stop(p.server)))
    for (const cleanup of cleanups.reverse()) {
      try {
        await cleanup()
      } catch (e) {
        console.error("[bench] cleanup failed:", e)
        failure ??= e
      }
    }
  }
  if (failure !== undefined) {
    console.error("[bench] FAILED:", failure instanceof Error ? failure.message : failure)
    for (const p of procs) if (p.notable.length) console.error(`[bench] ${p.name} log tail:\n${p.tail.join("\n")}`)
    process.exitCode = 1
  }
}

await main()
