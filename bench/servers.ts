import autocannon from "autocannon"
import { type ChildProcess, spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import * as os from "node:os"
import { join } from "node:path"
import buildIfStale from "../test/support/build.ts"
import { freePort, ROOT, round, sleep, withClient, withDatabase } from "./support.ts"

/**
 * Server processes a benchmark starts (the gateway and its peers) and the
 * autocannon rounds it drives them with: one process each, so CPU per
 * request is read from /proc for that process alone.
 */

export const CLK_TCK = 100 // USER_HZ on Linux

export interface Server {
  readonly name: string
  readonly url: string
  readonly child: ChildProcess
}

/** Starts `node <args>` in the repository; its output is drained (a full pipe would block its log writes). */
export const startProcess = (
  name: string,
  args: Array<string>,
  env: Record<string, string>,
  port: number,
  log: (message: string) => void
): Server => {
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"]
  })
  const tail: Array<string> = []
  for (const stream of [child.stdout!, child.stderr!]) {
    stream.on("data", (d: Buffer) => {
      tail.push(d.toString().slice(0, 500))
      if (tail.length > 20) tail.shift()
    })
  }
  child.on("exit", (code) => code && log(`${name} exited ${code}: ${tail.join("")}`))
  return { name, url: `http://127.0.0.1:${port}`, child }
}

/** Calls `onLine` with every whole line the process writes, on either stream (as UTF-8 text). */
export const eachLine = (child: ChildProcess, onLine: (line: string, stream: "stdout" | "stderr") => void) => {
  for (const [stream, label] of [[child.stdout!, "stdout"], [child.stderr!, "stderr"]] as const) {
    let pending = ""
    stream.setEncoding("utf8")
    stream.on("data", (chunk: string) => {
      pending += chunk
      let nl: number
      while ((nl = pending.indexOf("\n")) >= 0) {
        const line = pending.slice(0, nl)
        pending = pending.slice(nl + 1)
        onLine(line, label)
      }
    })
  }
}

/** Resolves once `path` answers below 500; fails if the process exits first or after 90 s. */
export const waitReady = async (server: Server, path: string) => {
  for (let i = 0; i < 900; i++) {
    if (server.child.exitCode !== null) throw new Error(`${server.name} exited before ready`)
    try {
      const res = await fetch(server.url + path, { signal: AbortSignal.timeout(2_000) })
      await res.arrayBuffer()
      if (res.status < 500) return
    } catch { /* not listening yet */ }
    await sleep(100)
  }
  throw new Error(`${server.name} not ready`)
}

/** SIGTERM, then SIGKILL after 15 s. */
export const stop = async (server: Server) => {
  if (server.child.exitCode !== null) return
  const exited = new Promise((ok) => server.child.once("exit", ok))
  server.child.kill("SIGTERM")
  if (!await Promise.race([exited.then(() => true), sleep(15_000).then(() => false)])) server.child.kill("SIGKILL")
}

/** utime + stime of a process in clock ticks. */
export const cpuTicks = (pid: number) => {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
  return Number(fields[11]) + Number(fields[12])
}

export interface Round {
  readonly rps: number
  readonly requests: number
  readonly cpuMsPerReq: number
  readonly non2xx: number
  readonly errors: number
}

/** One autocannon round against a server, with that server's CPU time per response. */
export const measureRound = async (
  server: Server,
  options: Omit<autocannon.Options, "url" | "duration"> & { readonly path: string },
  durationS: number
): Promise<Round> => {
  const before = cpuTicks(server.child.pid!)
  const { path, ...rest } = options
  const result = await autocannon({ ...rest, url: server.url + path, duration: durationS })
  const cpuMs = ((cpuTicks(server.child.pid!) - before) * 1000) / CLK_TCK
  return {
    rps: round(result.requests.total / durationS, 1),
    requests: result.requests.total,
    cpuMsPerReq: round(cpuMs / Math.max(1, result.requests.total), 3),
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts
  }
}

export const median = (xs: ReadonlyArray<number>) => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2
}

/** The median rate of some rounds and their CPU per response over all of them. */
export const summary = (rs: ReadonlyArray<Round>) => ({
  rps: round(median(rs.map((r) => r.rps)), 1),
  cpuMsPerReq: round(
    rs.reduce((a, r) => a + r.cpuMsPerReq * r.requests, 0) / Math.max(1, rs.reduce((a, r) => a + r.requests, 0)),
    3
  )
})

/**
 * What a gateway under a benchmark needs: a config folder (the repository's
 * config/, its limits adjusted by `limits`), a data folder and a database of
 * its own on `serverUrl`; `cleanups` removes them.
 */
export const gatewayInstallation = async (
  serverUrl: string,
  prefix: string,
  limits: (limits: any) => void,
  cleanups: Array<() => Promise<unknown>>,
  /** The checkout whose `config/` to start from (another commit's gateway reads its own). */
  root = ROOT
) => {
  const configDir = mkdtempSync(join(os.tmpdir(), `gw-${prefix}-config-`))
  const dataDir = mkdtempSync(join(os.tmpdir(), `gw-${prefix}-data-`))
  cleanups.push(
    async () => rmSync(configDir, { recursive: true, force: true }),
    async () => rmSync(dataDir, { recursive: true, force: true })
  )
  for (const file of ["groups.json", "models.json"]) {
    writeFileSync(join(configDir, file), readFileSync(join(root, "config", file)))
  }
  const adjusted = JSON.parse(readFileSync(join(root, "config", "limits.json"), "utf8"))
  limits(adjusted)
  writeFileSync(join(configDir, "limits.json"), JSON.stringify(adjusted, null, 2))

  const name = `bench_${prefix}_${Date.now().toString(36)}_${randomBytes(3).toString("hex")}`
  await withClient(serverUrl, (c) => c.query(`CREATE DATABASE ${name}`))
  cleanups.push(() => withClient(serverUrl, (c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)))
  return { configDir, dataDir, databaseUrl: withDatabase(serverUrl, name) }
}

/**
 * The compiled gateway, as `npm start` runs it (rebuilt first when a source
 * is newer), with `--cpu-prof` into the folder PROFILE names; ready once
 * /readyz answers, stopped by `cleanups`. `admin` posts to its admin API.
 */
export const startGateway = async (
  env: Record<string, string>,
  adminToken: string,
  cleanups: Array<() => Promise<unknown>>,
  log: (message: string) => void
) => {
  buildIfStale()
  const port = await freePort()
  const profile = process.env.PROFILE
  const gateway = startProcess(
    "gateway",
    [
      ...(profile ? ["--cpu-prof", `--cpu-prof-dir=${profile}`] : []),
      "dist/src/main.js"
    ],
    { HOST: "127.0.0.1", PORT: String(port), ADMIN_TOKEN: adminToken, ...env },
    port,
    log
  )
  cleanups.unshift(() => stop(gateway))
  await waitReady(gateway, "/readyz")
  const admin = async (path: string, json: unknown) => {
    const res = await fetch(gateway.url + path, {
      method: "POST",
      headers: { authorization: `Bearer ${adminToken}`, "content-type": "application/json" },
      body: JSON.stringify(json)
    })
    const body = await res.json() as any
    if (res.status >= 300) throw new Error(`POST ${path}: ${res.status} ${JSON.stringify(body)}`)
    return body
  }
  return { gateway, admin }
}
