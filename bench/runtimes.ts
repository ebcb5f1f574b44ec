/**
 * Benchmark: the same gateway on Node and on Deno, in one run on one machine.
 *
 * - Start-up: spawn → first 200 from /healthz, on a fresh DATA_DIR with the
 *   embedded PGlite (migrations included), ROLE=api. The runtimes take turns
 *   (node, deno, node, deno, …) so a change of machine load hits both.
 * - Authenticated read: `GET /v1/video/tasks/{id}` with `Authorization: Bearer ak_…`
 *   (the task is created through the API and stays queued: ROLE=api runs no
 *   engine), autocannon with 10 connections, 2 s warm-up, then 8 s measured.
 *   The read rate limit is raised in a copy of `config/`, as in bench/http-auth.ts.
 *
 *   npm run bench:runtimes
 *
 * Appends rows to the `runtimes` section of bench/RESULTS.md, with the load
 * average at start and end (the machine is shared; the figures are comparable
 * within one run, not across runs).
 */
import autocannon from "autocannon"
import { type ChildProcess, spawn } from "node:child_process"
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import * as os from "node:os"
import { join } from "node:path"
import { addRows } from "./markdown.ts"
import { freePort, machine, percentile, RESULTS_MD, ROOT, round, sleep } from "./support.ts"

const ADMIN_TOKEN = "adm_bench_0123456789abcdefghijklmnop"
const STARTS_PER_RUNTIME = Number(process.env.BENCH_STARTS ?? 3)
const LOAD = { connections: 10, warmupS: 2, durationS: 8 } as const
const READY_TIMEOUT_MS = 120_000

type Runtime = "node" | "deno"
const COMMANDS: Record<Runtime, [string, Array<string>]> = {
  node: [process.execPath, ["--import", "tsx", "src/main.ts"]],
  deno: [join(ROOT, "node_modules/.bin/deno"), ["run", "--allow-all", "src/runtime/deno/main.ts"]]
}

const log = (message: string) => console.log(`[bench] ${message}`)

interface Running {
  readonly child: ChildProcess
  readonly url: string
  readonly dataDir: string
  exited: boolean
}

/** The read limiter would answer 429 under load; its bookkeeping still runs. */
const configDir = (() => {
  const dir = mkdtempSync(join(os.tmpdir(), "bench-runtimes-config-"))
  cpSync(join(ROOT, "config"), dir, { recursive: true })
  const file = join(dir, "limits.json")
  const limits = JSON.parse(readFileSync(file, "utf8"))
  for (const rate of Object.values(limits.rate_limits) as Array<any>) rate.per_second = rate.burst = 1_000_000
  writeFileSync(file, JSON.stringify(limits))
  return dir
})()

const launch = async (runtime: Runtime): Promise<Running> => {
  const port = await freePort()
  const dataDir = mkdtempSync(join(os.tmpdir(), `bench-runtimes-${runtime}-`))
  const env: Record<string, string | undefined> = {
    ...process.env,
    HOST: "127.0.0.1",
    PORT: String(port),
    DATA_DIR: dataDir,
    CONFIG_DIR: configDir,
    ADMIN_TOKEN,
    ROLE: "api",
    PUBLIC_BASE_URL: `http://127.0.0.1:${port}`
  }
  delete env.DATABASE_URL
  const [command, args] = COMMANDS[runtime]
  const child = spawn(command, args, { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"] })
  // Drained so a full pipe never blocks the service's writes; request logs are not kept.
  child.stdout!.resume()
  child.stderr!.resume()
  const running: Running = { child, url: `http://127.0.0.1:${port}`, dataDir, exited: false }
  child.once("exit", () => (running.exited = true))
  return running
}

const healthy = async (service: Running) => {
  const until = Date.now() + READY_TIMEOUT_MS
  while (Date.now() < until && !service.exited) {
    const ok = await fetch(`${service.url}/healthz`).then((r) => r.status === 200, () => false)
    if (ok) return
    await sleep(25)
  }
  throw new Error(`the service at ${service.url} never answered /healthz (exited: ${service.exited})`)
}

const stop = async (service: Running) => {
  if (!service.exited) {
    service.child.kill("SIGTERM")
    await Promise.race([new Promise((r) => service.child.once("exit", r)), sleep(15_000)])
    if (!service.exited) service.child.kill("SIGKILL")
  }
  rmSync(service.dataDir, { recursive: true, force: true })
}

const startUp = async (runtime: Runtime) => {
  const started = performance.now()
  const service = await launch(runtime)
  try {
    await healthy(service)
    return performance.now() - started
  } finally {
    await stop(service)
  }
}

const json = async (url: string, method: string, key: string, body?: unknown) => {
  const res = await fetch(url, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  if (res.status >= 300) throw new Error(`${method} ${url}: ${res.status} ${await res.text()}`)
  return res.json() as Promise<any>
}

/** An account, its keys and one queued task; the read path's URL and headers. */
const readTarget = async (service: Running) => {
  const account = await json(`${service.url}/admin/v1/accounts`, "POST", ADMIN_TOKEN, {
    name: "bench",
    wallet_credits: 100
  })
  const keys = `${service.url}/admin/v1/accounts/${account.id}/keys`
  const model = await json(keys, "POST", ADMIN_TOKEN, { kind: "model" })
  const resource = await json(keys, "POST", ADMIN_TOKEN, { kind: "resource" })
  const task = await json(`${service.url}/v1/video/tasks`, "POST", model.key, {
    model: "provy-famS-2.0-480p",
    operation: "generation",
    input: { prompt: "a benchmark" },
    output: { duration: 4 }
  })
  return { url: `${service.url}/v1/video/tasks/${task.id}`, headers: { authorization: `Bearer ${resource.key}` } }
}

const load = async (target: { url: string; headers: Record<string, string> }, durationS: number) => {
  const times: Array<number> = []
  let non2xx = 0
  const instance = autocannon({
    ...target,
    connections: LOAD.connections,
    pipelining: 1,
    duration: durationS,
    timeout: 10
  })
  instance.on("response", (_client, status, _bytes, ms) => {
    times.push(ms)
    if (status !== 200) non2xx++
  })
  const result = await instance
  const sorted = Float64Array.from(times).sort()
  return {
    rps: round(result.requests.mean, 1),
    p50: round(percentile(sorted, 50)!, 2),
    p99: round(percentile(sorted, 99)!, 2),
    non2xx
  }
}

const readPath = async (runtime: Runtime) => {
  const service = await launch(runtime)
  try {
    await healthy(service)
    const target = await readTarget(service)
    await load(target, LOAD.warmupS)
    return await load(target, LOAD.durationS)
  } finally {
    await stop(service)
  }
}

const main = async () => {
  const loadStart = os.loadavg()[0]!
  const version = (command: string, args: Array<string>) =>
    new Promise<string>((ok) => {
      const child = spawn(command, args, { stdio: ["ignore", "pipe", "ignore"] })
      let out = ""
      child.stdout.on("data", (d) => (out += d))
      child.on("close", () => ok(out.split("\n")[0]!.trim()))
    })
  const denoVersion = await version(COMMANDS.deno[0], ["--version"])
  log(`${process.version}, ${denoVersion}, load ${loadStart.toFixed(2)}`)

  const starts: Record<Runtime, Array<number>> = { node: [], deno: [] }
  for (let i = 0; i < STARTS_PER_RUNTIME; i++) {
    for (const runtime of ["node", "deno"] as const) {
      const ms = await startUp(runtime)
      starts[runtime].push(Math.round(ms))
      log(`start-up ${runtime}: ${Math.round(ms)} ms`)
    }
  }
  const reads: Partial<Record<Runtime, Awaited<ReturnType<typeof readPath>>>> = {}
  for (const runtime of ["node", "deno"] as const) {
    reads[runtime] = await readPath(runtime)
    log(`read path ${runtime}: ${JSON.stringify(reads[runtime])}`)
  }
  const loadEnd = os.loadavg()[0]!
  rmSync(configDir, { recursive: true, force: true })

  const m = machine()
  const date = new Date().toISOString().slice(0, 10)
  const where = `${m.cpu.split(" ").slice(0, 2).join(" ")}, ${m.cores} cores, ${m.node}, ${denoVersion}, load ${
    loadStart.toFixed(2)
  } → ${loadEnd.toFixed(2)}`
  const median = (xs: Array<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
  const rows = (["node", "deno"] as const).map((runtime) => {
    const r = reads[runtime]!
    return `| ${date} | ${where} | ${runtime} | ${starts[runtime].join(" / ")} (median ${
      median(starts[runtime])
    }) | ${r.rps} | ${r.p50} / ${r.p99} | ${r.non2xx} |`
  })
  const header = [
    "## runtimes",
    "",
    "The same gateway on Node (`src/main.ts`, node:http) and on Deno (`src/runtime/deno/main.ts`,",
    "Deno.serve), same machine, same run (`npm run bench:runtimes`, bench/runtimes.ts): start-up is",
    "spawn → first 200 from /healthz on a fresh PGlite data directory; the read path is",
    "`GET /v1/video/tasks/{id}` with a resource key on PGlite, 10 connections, 8 s after a 2 s warm-up.",
    "",
    "| Date | Machine | Runtime | Start-up ms (each / median) | Read req/s | Read p50 / p99 ms | Non-200 |",
    "|---|---|---|---|---:|---:|---:|"
  ].join("\n")
  writeFileSync(RESULTS_MD, addRows(readFileSync(RESULTS_MD, "utf8"), "runtimes", header, rows))
  for (const row of rows) log(row)
}

main().catch((e) => {
  console.error(e)
  process.exit(1)
})
