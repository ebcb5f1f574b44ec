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
 *   BEFORE=/path/to/other/checkout DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npx tsx bench/checkouts-ab.ts
 *   ROUNDS=6 ROUND_S=4 …   # defaults
 */
import { spawn } from "node:child_process"
import * as os from "node:os"
import { resolve } from "node:path"
import { gatewayInstallation, measureRound, type Round, type Server, stop, waitReady } from "./servers.ts"
import { freePort, gitHead, machine, ROOT } from "./support.ts"

const ADMIN_TOKEN = "adm_bench_0123456789abcdefghijklmnop"
const ROUNDS = Number(process.env.ROUNDS ?? 6)
const ROUND_S = Number(process.env.ROUND_S ?? 4)
const CONNECTIONS = 10
const SPREAD = 100
const BODY = JSON.stringify({
  model: "provy-famS-2.0-480p",
  operation: "generation",
  input: { prompt: "a red fox running through snow" },
  output: { duration: 5 }
})

const log = (message: string) => console.log(`[checkouts-ab] ${message}`)

const startIn = async (name: string, dir: string, env: Record<string, string>): Promise<Server> => {
  const port = await freePort()
  const child = spawn(process.execPath, ["dist/src/main.js"], {
    cwd: dir,
    env: { ...process.env, HOST: "127.0.0.1", PORT: String(port), ADMIN_TOKEN, ...env },
    stdio: ["ignore", "ignore", "ignore"]
  })
  const server = { name, url: `http://127.0.0.1:${port}`, child }
  await waitReady(server, "/readyz")
  return server
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
  const install = await gatewayInstallation(serverUrl, `ab${name}`, (limits) => {
    limits.rate_limits.create = { per_second: 1_000_000, burst: 1_000_000 }
    limits.rate_limits.read = { per_second: 1_000_000, burst: 1_000_000 }
  }, cleanups)
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
  return { server, accounts, taskId: task.id as string }
}

const main = async () => {
  const before = process.env.BEFORE
  if (before === undefined) throw new Error("BEFORE: the directory of the other checkout (with its dist/ built)")
  const serverUrl = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test"
  const loadStart = os.loadavg()[0]!
  const cleanups: Array<() => Promise<unknown>> = []
  try {
    const sides = [
      { label: "before", ...(await prepared("before", resolve(before), serverUrl, cleanups)) },
      { label: "after", ...(await prepared("after", ROOT, serverUrl, cleanups)) }
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
    for (const side of sides) {
      await read(side, 2)
      await create(side, 2)
    }
    const rounds: Record<string, Array<Round>> = {}
    for (let i = 0; i < ROUNDS; i++) {
      // The order flips every round, so neither side always runs first.
      for (const side of i % 2 === 0 ? sides : [...sides].reverse()) {
        for (const [path, run] of [["read", read], ["create", create]] as const) {
          const r = await run(side, ROUND_S)
          if (r.non2xx > 0 || r.errors > 0) {
            throw new Error(`${side.label} ${path}: ${r.non2xx} non-2xx, ${r.errors} errors`)
          }
          ;(rounds[`${side.label} ${path}`] ??= []).push(r)
          log(`round ${i + 1} ${side.label} ${path}: ${r.rps} req/s, ${r.cpuMsPerReq} ms CPU/req`)
        }
      }
    }
    const cpu = (rs: ReadonlyArray<Round>) =>
      rs.reduce((s, r) => s + r.cpuMsPerReq * r.requests, 0) / rs.reduce((s, r) => s + r.requests, 0)
    const result = Object.fromEntries(
      Object.entries(rounds).map((
        [k, rs]
      ) => [k, { cpuMsPerReq: Number(cpu(rs).toFixed(4)), rounds: rs.map((r) => r.cpuMsPerReq) }])
    )
    const m = machine()
    log(
      JSON.stringify({
        machine: `${m.cpu}, ${m.cores} cores, node ${m.node}`,
        after: await gitHead(),
        result,
        load: [loadStart, os.loadavg()[0]]
      })
    )
  } finally {
    for (const cleanup of cleanups) await cleanup().catch(() => undefined)
  }
}

await main()
