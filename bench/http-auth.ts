/**
 * Benchmark: one authenticated read through the real gateway, against a bare
 * node:http server that answers the same bytes. The ratio is what the gateway
 * (routing, request id, access log, key lookup, rate limit, task lookup, JSON)
 * costs per request over plain Node on this machine.
 *
 *   npm run bench:http                                   # embedded PGlite
 *   DATABASE_URL=postgres://… npm run bench:http          # PostgreSQL
 *
 * Writes bench/results/http-auth-<date>.json (one entry per run of that day)
 * and appends a row to bench/RESULTS.md.
 */
import autocannon from "autocannon"
import { type ChildProcess, spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import * as os from "node:os"
import { join } from "node:path"
import { Worker } from "node:worker_threads"
import { addRows } from "./markdown.ts"
import { eachLine } from "./servers.ts"
import {
  freePort,
  gitHead,
  machine,
  percentile,
  RESULTS_DIR,
  RESULTS_MD,
  ROOT,
  sleep,
  withClient,
  withDatabase
} from "./support.ts"

const ADMIN_TOKEN = "adm_bench_0123456789abcdefghijklmnop"
const SETTINGS = { connections: 10, pipelining: 1, durationS: 10, warmupS: 3, timeoutS: 10 } as const
const READY_TIMEOUT_MS = 90_000
const STOP_TIMEOUT_MS = 15_000

const log = (message: string) => console.log(`[bench] ${message}`)

// ---------------------------------------------------------------------------
// Helpers

const round = (n: number, digits = 3) => Number(n.toFixed(digits))

// ---------------------------------------------------------------------------
// The gateway as a child process

interface Gateway {
  readonly url: string
  readonly child: ChildProcess
  readonly logs: { lines: number; accessLines: number; notable: Array<string>; tail: Array<string> }
  exited: boolean
  exitCode: number | null
  exitSignal: NodeJS.Signals | null
}

const ACCESS_LOG = /"message"\s*:\s*"request"/
const NOTABLE = /"(?:logLevel|level)"\s*:\s*"(?:WARN|WARNING|ERROR|FATAL)"/i

const startGateway = (env: Record<string, string>, port: number): Gateway => {
  const childEnv: Record<string, string | undefined> = { ...process.env, ...env }
  if (env.DATABASE_URL === undefined) delete childEnv.DATABASE_URL
  const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], {
    cwd: ROOT,
    env: childEnv,
    stdio: ["ignore", "pipe", "pipe"]
  })
  const gw: Gateway = {
    url: `http://127.0.0.1:${port}`,
    child,
    logs: { lines: 0, accessLines: 0, notable: [], tail: [] },
    exited: false,
    exitCode: null,
    exitSignal: null
  }
  // Both pipes are always drained: a full pipe would block the gateway's writes.
  eachLine(child, (line, name) => {
    gw.logs.lines++
    if (ACCESS_LOG.test(line)) gw.logs.accessLines++
    if (name === "stderr" || NOTABLE.test(line)) {
      if (gw.logs.notable.length < 50) gw.logs.notable.push(`${name}: ${line.slice(0, 2000)}`)
    }
    gw.logs.tail.push(`${name}: ${line.slice(0, 2000)}`)
    if (gw.logs.tail.length > 40) gw.logs.tail.shift()
  })
  child.on("exit", (code, signal) => {
    gw.exited = true
    gw.exitCode = code
    gw.exitSignal = signal
  })
  return gw
}

const waitReady = async (gw: Gateway) => {
  const started = Date.now()
  while (Date.now() - started < READY_TIMEOUT_MS) {
    if (gw.exited) throw new Error(`gateway exited before ready (code ${gw.exitCode}, signal ${gw.exitSignal})`)
    try {
      const res = await fetch(`${gw.url}/readyz`, { signal: AbortSignal.timeout(2_000) })
      await res.arrayBuffer()
      if (res.status === 200) return Date.now() - started
    } catch {
      // not listening yet
    }
    await sleep(100)
  }
  throw new Error(`gateway not ready after ${READY_TIMEOUT_MS} ms`)
}

const stopGateway = async (gw: Gateway) => {
  if (gw.exited) return { ms: 0, code: gw.exitCode, signal: gw.exitSignal, killed: false }
  const started = Date.now()
  const exited = new Promise<void>((ok) => gw.child.once("exit", () => ok()))
  gw.child.kill("SIGTERM")
  const inTime = await Promise.race([exited.then(() => true), sleep(STOP_TIMEOUT_MS).then(() => false)])
  if (!inTime) {
    gw.child.kill("SIGKILL")
    await exited
  }
  return { ms: Date.now() - started, code: gw.exitCode, signal: gw.exitSignal, killed: !inTime }
}

/** Peak resident memory of the gateway process, from /proc (Linux only). */
const peakRssMiB = (pid: number | undefined): number | null => {
  if (pid === undefined) return null
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8")
    const kb = /VmHWM:\s+(\d+) kB/.exec(status)?.[1]
    return kb ? round(Number(kb) / 1024, 1) : null
  } catch {
    return null
  }
}

// ---------------------------------------------------------------------------
// The bare server, on a worker thread of this process so it does not share an
// event loop with the load generator (the gateway has a process of its own).

const BARE_SERVER = `
const { parentPort, workerData } = require("node:worker_threads")
const http = require("node:http")
const body = Buffer.from(workerData.body)
const headers = { "content-type": workerData.contentType, "content-length": String(body.length) }
const server = http.createServer((req, res) => {
  req.resume()
  res.writeHead(workerData.status, headers)
  res.end(body)
})
server.listen(0, "127.0.0.1", () => parentPort.postMessage(server.address().port))
parentPort.on("message", () => {
  server.close(() => parentPort.close())
  server.closeAllConnections()
})
`

const startBare = async (status: number, body: Uint8Array, contentType: string) => {
  const worker = new Worker(BARE_SERVER, { eval: true, workerData: { status, body, contentType } })
  const port = await new Promise<number>((ok, fail) => {
    worker.once("message", ok)
    worker.once("error", fail)
  })
  return {
    url: `http://127.0.0.1:${port}`,
    stop: async () => {
      worker.postMessage("stop")
      await Promise.race([new Promise((ok) => worker.once("exit", ok)), sleep(3_000)])
      await worker.terminate()
    }
  }
}

// ---------------------------------------------------------------------------
// Load

interface Measured {
  readonly requestsPerSecMean: number
  readonly requestsPerSecStddev: number
  readonly completedRequests: number
  readonly sentRequests: number
  readonly latencyMs: {
    readonly p50: number
    readonly p90: number
    readonly p99: number
    readonly mean: number
    readonly max: number
  }
  /** autocannon's own histogram, which records whole milliseconds. */
  readonly autocannonLatencyMs: { readonly p50: number; readonly p99: number; readonly mean: number }
  readonly statusCodes: Record<string, number>
  readonly errors: number
  readonly timeouts: number
  readonly resets: number
  readonly non2xx: number
  readonly durationS: number
}

const load = async (url: string, headers: Record<string, string>, durationS: number): Promise<Measured> => {
  // Exact response times (float ms) from the response events; autocannon's
  // histogram rounds to whole milliseconds, too coarse for a bare server.
  let times = new Float64Array(1 << 16)
  let n = 0
  const instance = autocannon({
    url,
    headers,
    connections: SETTINGS.connections,
    pipelining: SETTINGS.pipelining,
    duration: durationS,
    timeout: SETTINGS.timeoutS
  })
  instance.on("response", (_client, _status, _bytes, ms) => {
    if (n === times.length) {
      const grown = new Float64Array(times.length * 2)
      grown.set(times)
      times = grown
    }
    times[n++] = ms
  })
  const result = await instance
  const sorted = times.slice(0, n).sort()
  let sum = 0
  for (const t of sorted) sum += t
  return {
    requestsPerSecMean: round(result.requests.mean, 1),
    requestsPerSecStddev: round(result.requests.stddev, 1),
    completedRequests: result.requests.total,
    sentRequests: result.requests.sent,
    latencyMs: {
      p50: round(percentile(sorted, 50)),
      p90: round(percentile(sorted, 90)),
      p99: round(percentile(sorted, 99)),
      mean: round(n ? sum / n : NaN),
      max: round(n ? sorted[n - 1]! : NaN)
    },
    autocannonLatencyMs: { p50: result.latency.p50, p99: result.latency.p99, mean: round(result.latency.mean) },
    statusCodes: Object.fromEntries(Object.entries(result.statusCodeStats).map(([k, v]) => [k, v.count])),
    errors: result.errors,
    timeouts: result.timeouts,
    resets: result.resets,
    non2xx: result.non2xx,
    durationS: result.duration
  }
}

/** Problems with a run: anything but the expected status, errors, timeouts. */
const check = (name: string, m: Measured, expected: number): Array<string> => {
  const problems: Array<string> = []
  const counted = Object.values(m.statusCodes).reduce((a, b) => a + b, 0)
  if (counted === 0) problems.push(`${name}: no responses`)
  if (counted !== m.completedRequests) {
    problems.push(`${name}: ${counted} status codes for ${m.completedRequests} responses`)
  }
  for (const [code, count] of Object.entries(m.statusCodes)) {
    if (Number(code) !== expected) {
      problems.push(`${name}: ${count} responses with status ${code} (expected only ${expected})`)
    }
  }
  const expectedNon2xx = expected >= 200 && expected < 300 ? 0 : counted
  if (m.non2xx !== expectedNon2xx) problems.push(`${name}: non2xx ${m.non2xx}, expected ${expectedNon2xx}`)
  if (m.errors !== 0) problems.push(`${name}: ${m.errors} errors`)
  if (m.timeouts !== 0) problems.push(`${name}: ${m.timeouts} timeouts`)
  if (m.resets !== 0) problems.push(`${name}: ${m.resets} resets`)
  return problems
}

// ---------------------------------------------------------------------------
// Admin API and fixture

const adminCall = async (gw: Gateway, path: string, json: unknown) => {
  const res = await fetch(gw.url + path, {
    method: "POST",
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify(json)
  })
  const body = await res.json() as any
  if (res.status !== 201 && res.status !== 200) throw new Error(`POST ${path}: ${res.status} ${JSON.stringify(body)}`)
  return body
}

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
const taskId = () => `task_${Array.from(randomBytes(22), (b) => BASE62[b % 62]).join("")}`

// ---------------------------------------------------------------------------
// Report

const RESULTS_HEADER = `# Benchmark results

## http-auth

One authenticated read through the real gateway, compared with a bare
\`node:http\` server answering the same status, body bytes and content type.

- The gateway runs as a child process (\`node --import tsx src/main.ts\`) with a
  fresh \`DATA_DIR\`, on the embedded PGlite or, when \`DATABASE_URL\` is set, on a
  fresh PostgreSQL database created and dropped for the run.
- Request: \`GET /v1/video/tasks/{id}\` with \`Authorization: Bearer ak_…\` (a
  resource key made through the admin API). On PostgreSQL the task row is
  inserted directly, so the path is the 200 with the task object; on PGlite the
  id is unknown, so the path is the authenticated 404 (auth and the same lookup).
- The read rate limit is raised in a copy of \`config/\` so the limiter
  (200/s per key by default) does not answer 429 during the run; its bookkeeping
  still runs on every request.
- The bare server runs on a worker thread of the benchmark process.
- autocannon: 10 connections, no pipelining, 3 s warm-up then 10 s measured,
  per target. Latency percentiles are exact, from every response time.
- Ratios are gateway / bare: throughput (below 1 = slower) and p50 latency
  (above 1 = slower).

Run: \`npm run bench:http\` or \`DATABASE_URL=postgres://… npm run bench:http\`.
Each run appends a row here and an entry to \`bench/results/http-auth-<date>.json\`.

| Date | Machine | Backend | Path | Gateway req/s | Gateway p50 / p99 ms | Bare req/s | Bare p50 / p99 ms | Throughput gw/bare | p50 gw/bare |
|---|---|---|---|---:|---:|---:|---:|---:|---:|
`

// ---------------------------------------------------------------------------
// Main

const main = async () => {
  const startedAt = new Date()
  const serverUrl = process.env.DATABASE_URL
  const backend = serverUrl ? "postgresql" : "pglite"
  const cleanups: Array<() => Promise<unknown> | unknown> = []
  let failure: unknown = undefined
  let gw: Gateway | undefined
  try {
    const dataDir = mkdtempSync(join(os.tmpdir(), "gw-bench-data-"))
    cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }))
    const configDir = mkdtempSync(join(os.tmpdir(), "gw-bench-config-"))
    cleanups.push(() => rmSync(configDir, { recursive: true, force: true }))
    for (const file of ["groups.json", "models.json"]) {
      writeFileSync(join(configDir, file), readFileSync(join(ROOT, "config", file)))
    }
    const limits = JSON.parse(readFileSync(join(ROOT, "config", "limits.json"), "utf8"))
    limits.rate_limits.read = { per_second: 1_000_000, burst: 1_000_000 }
    writeFileSync(join(configDir, "limits.json"), JSON.stringify(limits, null, 2))

    let databaseUrl: string | undefined
    if (serverUrl) {
      const name = `bench_${Date.now().toString(36)}_${randomBytes(4).toString("hex")}`
      await withClient(serverUrl, (c) => c.query(`CREATE DATABASE ${name}`))
      databaseUrl = withDatabase(serverUrl, name)
      cleanups.push(() => withClient(serverUrl, (c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)))
      log(`database ${name}`)
    }

    const port = await freePort()
    gw = startGateway({
      HOST: "127.0.0.1",
      PORT: String(port),
      DATA_DIR: dataDir,
      CONFIG_DIR: configDir,
      ADMIN_TOKEN,
      ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {})
    }, port)
    const gateway = gw
    cleanups.unshift(async () => {
      const stop = await stopGateway(gateway)
      log(
        `gateway stopped in ${stop.ms} ms (code ${stop.code}, signal ${stop.signal}${
          stop.killed ? ", SIGKILL after timeout" : ""
        })`
      )
      return stop
    })
    const readyMs = await waitReady(gateway)
    log(`gateway ready at ${gateway.url} after ${readyMs} ms (${backend})`)

    const account = await adminCall(gateway, "/admin/v1/accounts", { name: "bench" })
    const key = await adminCall(gateway, `/admin/v1/accounts/${account.id}/keys`, { kind: "resource" })
    if (typeof key.key !== "string" || !key.key.startsWith("ak_")) {
      throw new Error(`unexpected key: ${JSON.stringify(key)}`)
    }

    const id = taskId()
    let expected = 404
    if (databaseUrl) {
      const now = Math.floor(Date.now() / 1000)
      await withClient(databaseUrl, (c) =>
        c.query(
          `INSERT INTO tasks (id, account_id, kind, model, operation, status, request, created_at, updated_at)
           VALUES ($1, $2, 'video', 'provx-famS-2.0-720p', 'generation', 'queued', '{}'::jsonb, $3, $3)`,
          [id, account.id, now]
        ))
      expected = 200
    }
    const path = `/v1/video/tasks/${id}`
    const headers = { authorization: `Bearer ${key.key}` }

    const probe = await fetch(gateway.url + path, { headers })
    const body = new Uint8Array(await probe.arrayBuffer())
    const contentType = probe.headers.get("content-type") ?? "application/octet-stream"
    const text = new TextDecoder().decode(body)
    if (probe.status !== expected) throw new Error(`GET ${path}: ${probe.status}, expected ${expected}: ${text}`)
    const parsed = JSON.parse(text)
    if (expected === 200 && parsed.id !== id) throw new Error(`GET ${path}: unexpected body ${text}`)
    if (expected === 404 && typeof parsed?.error?.request_id !== "string") {
      throw new Error(`GET ${path}: unexpected body ${text}`)
    }
    log(`GET ${path} -> ${probe.status} ${contentType}, ${body.length} bytes: ${text}`)

    const bare = await startBare(probe.status, body, contentType)
    cleanups.unshift(() => bare.stop())

    log(`gateway: warm-up ${SETTINGS.warmupS} s`)
    const gwWarm = await load(gateway.url + path, headers, SETTINGS.warmupS)
    log(`gateway: measuring ${SETTINGS.durationS} s`)
    const gwRun = await load(gateway.url + path, headers, SETTINGS.durationS)
    const gwRss = peakRssMiB(gateway.child.pid)
    log(`bare: warm-up ${SETTINGS.warmupS} s`)
    const bareWarm = await load(bare.url + path, headers, SETTINGS.warmupS)
    log(`bare: measuring ${SETTINGS.durationS} s`)
    const bareRun = await load(bare.url + path, headers, SETTINGS.durationS)

    const problems = [
      ...check("gateway warm-up", gwWarm, expected),
      ...check("gateway", gwRun, expected),
      ...check("bare warm-up", bareWarm, expected),
      ...check("bare", bareRun, expected)
    ]
    if (gateway.exited) problems.push(`gateway exited during the run (code ${gateway.exitCode})`)

    const ratios = {
      throughput: round(gwRun.requestsPerSecMean / bareRun.requestsPerSecMean),
      latencyP50: round(gwRun.latencyMs.p50 / bareRun.latencyMs.p50, 2)
    }
    const m = machine()
    const entry = {
      benchmark: "http-auth",
      date: startedAt.toISOString(),
      commit: await gitHead(),
      machine: m,
      backend,
      path: {
        method: "GET",
        route: "/v1/video/tasks/{task_id}",
        status: expected,
        bodyBytes: body.length,
        contentType
      },
      settings: SETTINGS,
      gateway: {
        ...gwRun,
        readyMs,
        peakRssMiB: gwRss,
        logLines: gateway.logs.lines,
        accessLogLines: gateway.logs.accessLines,
        warnOrErrorLogLines: gateway.logs.notable
      },
      bare: bareRun,
      ratios,
      ok: problems.length === 0,
      problems
    }

    const day = startedAt.toISOString().slice(0, 10)
    mkdirSync(RESULTS_DIR, { recursive: true })
    const file = join(RESULTS_DIR, `http-auth-${day}.json`)
    const previous = existsSync(file) ? JSON.parse(readFileSync(file, "utf8")) : { runs: [] }
    previous.runs.push(entry)
    writeFileSync(file, JSON.stringify(previous, null, 2) + "\n")

    if (problems.length === 0) {
      const machineText = `${m.cpu}, ${m.cores} cores, ${m.memoryGiB} GiB, node ${m.node}, ${m.platform}`
      const row =
        `| ${day} | ${machineText} | ${backend} | ${expected} | ${gwRun.requestsPerSecMean} | ${gwRun.latencyMs.p50} / ${gwRun.latencyMs.p99} | ${bareRun.requestsPerSecMean} | ${bareRun.latencyMs.p50} / ${bareRun.latencyMs.p99} | ${ratios.throughput} | ${ratios.latencyP50} |\n`
      const existing = existsSync(RESULTS_MD) ? readFileSync(RESULTS_MD, "utf8") : RESULTS_HEADER
      // Into this benchmark's own table: other sections may follow it.
      writeFileSync(RESULTS_MD, addRows(existing, "http-auth", RESULTS_HEADER, [row.trimEnd()]))
    }

    console.log(JSON.stringify(entry, null, 2))
    log(
      `${backend}, path ${expected}: gateway ${gwRun.requestsPerSecMean} req/s p50 ${gwRun.latencyMs.p50} ms p99 ${gwRun.latencyMs.p99} ms | bare ${bareRun.requestsPerSecMean} req/s p50 ${bareRun.latencyMs.p50} ms p99 ${bareRun.latencyMs.p99} ms | throughput x${ratios.throughput}, p50 x${ratios.latencyP50}`
    )
    log(`wrote ${file}${problems.length === 0 ? ` and a row in ${RESULTS_MD}` : ""}`)
    if (problems.length) throw new Error(`benchmark checks failed:\n  ${problems.join("\n  ")}`)
  } catch (e) {
    failure = e
  } finally {
    for (const cleanup of cleanups) {
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
    if (gw) console.error(`[bench] gateway log tail:\n${gw.logs.tail.join("\n")}`)
    process.exitCode = 1
  }
}

await main()
