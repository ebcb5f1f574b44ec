/**
 * Benchmark, the read path (targets: 0.7x the peer's req/s, 1.5x its CPU per
 * request; docs/performance.md): `GET /v1/video/tasks/{id}` with an `ak_` key
 * through the gateway on PostgreSQL, against a fastify + pg peer and a
 * node:http + pg peer doing the same authenticated lookup (bench/read-peer.ts).
 * All three are processes of their own; autocannon drives them in interleaved
 * rounds (gateway, fastify, node, then the other way round, …) so a change of
 * load on this shared machine hits them alike. Server CPU per request
 * is the process's utime + stime from /proc/<pid>/stat over a round divided by
 * the responses of that round.
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npx tsx bench/read-path.ts
 *   ROUNDS=4 ROUND_S=4 …   # defaults
 *   PROFILE=dir …          # the gateway runs with --cpu-prof into dir
 */
import { randomBytes } from "node:crypto"
import * as os from "node:os"
import { canonicalJson } from "../src/platform/Digest.ts"
import {
  gatewayInstallation,
  measureRound,
  type Round,
  type Server,
  startGateway,
  startProcess as startServer,
  stop,
  summary,
  waitReady
} from "./servers.ts"
import { freePort, gitHead, machine, recordRun, round, withClient } from "./support.ts"

const ADMIN_TOKEN = "adm_bench_0123456789abcdefghijklmnop"
const ROUNDS = Number(process.env.ROUNDS ?? 4)
const ROUND_S = Number(process.env.ROUND_S ?? 4)
const WARMUP_S = 2
const CONNECTIONS = 10

const log = (message: string) => console.log(`[read-path] ${message}`)

const startProcess = (name: string, args: Array<string>, env: Record<string, string>, port: number) =>
  startServer(name, args, env, port, log)

const round1 = (server: Server, path: string, headers: Record<string, string>, durationS: number) =>
  measureRound(server, { path, headers, connections: CONNECTIONS }, durationS)

const HEADER = `## read-path

\`GET /v1/video/tasks/{id}\` with an \`ak_\` key, gateway on PostgreSQL (\`node dist/src/main.js\` from 2026-11-23 19:30 on, before that through tsx,
a fresh database per run, read rate limit raised so no 429) against a fastify + pg peer
(\`bench/read-peer.ts\`: SHA-256 of the key, key joined with its account, task of that account,
the same JSON). autocannon, 10 connections, ${WARMUP_S} s warm-up each, then interleaved rounds;
req/s is the median round, CPU/req is the server process's utime + stime (/proc) over all
rounds divided by its responses. Load is the 1-minute load average at start / end (2 shared cores).

Run: \`DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npx tsx bench/read-path.ts\`.

From 2026-11-29 on, the last three columns are the node:http + pg peer's (\`PEER=node\` in
\`bench/read-peer.ts\`, the same look-up without a framework): its req/s, the gateway's over it, and its
CPU per request.

| Date | Machine | Commit | Rounds | Gateway req/s | Peer req/s | req/s gw/peer | Gateway CPU ms/req | Peer CPU ms/req | CPU gw/peer | Load start / end | node:http req/s | req/s gw/node | node:http CPU ms/req |
|---|---|---|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|
`

const main = async () => {
  const serverUrl = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test"
  const loadStart = os.loadavg()[0]!
  const cleanups: Array<() => Promise<unknown>> = []
  try {
    const { configDir, dataDir, databaseUrl } = await gatewayInstallation(serverUrl, "read", (limits) => {
      limits.rate_limits.read = { per_second: 1_000_000, burst: 1_000_000 }
    }, cleanups)
    // ROLE=api: no worker, which would take the queued task written below and fail it
    // (its stored request is not one the engine can run), changing the answer mid-run.
    const { admin, gateway } = await startGateway(
      { DATA_DIR: dataDir, CONFIG_DIR: configDir, DATABASE_URL: databaseUrl, ROLE: "api" },
      ADMIN_TOKEN,
      cleanups,
      log
    )
    const account = await admin("/admin/v1/accounts", { name: "bench" })
    const key = await admin(`/admin/v1/accounts/${account.id}/keys`, { kind: "resource" })
    const id = `task_${randomBytes(16).toString("hex").slice(0, 22)}`
    const now = Math.floor(Date.now() / 1000)
    await withClient(databaseUrl, (c) =>
      c.query(
        `INSERT INTO tasks (id, account_id, kind, model, operation, status, request, created_at, updated_at)
       VALUES ($1, $2, 'video', 'provx-famS-2.0-720p', 'generation', 'queued', '{}'::jsonb, $3, $3)`,
        [id, account.id, now]
      ))

    const startPeer = async (name: string, kind: "fastify" | "node") => {
      const port = await freePort()
      const server = startProcess(name, ["--import", "tsx", "bench/read-peer.ts"], {
        PORT: String(port),
        DATABASE_URL: databaseUrl,
        PEER: kind
      }, port)
      cleanups.unshift(() => stop(server))
      await waitReady(server, "/healthz")
      return server
    }
    const peer = await startPeer("peer", "fastify")
    const node = await startPeer("node", "node")

    const path = `/v1/video/tasks/${id}`
    const headers = { authorization: `Bearer ${key.key}` }
    const bodies = await Promise.all([gateway, peer, node].map(async (s) => {
      const res = await fetch(s.url + path, { headers })
      // Same members and values; the gateway's schema encoder orders keys its own way.
      return `${res.status} ${canonicalJson(await res.json())}`
    }))
    if (bodies[0] !== bodies[1] || bodies[0] !== bodies[2] || !bodies[0]!.startsWith("200 ")) {
      throw new Error(`answers differ:\n${bodies.join("\n")}`)
    }
    log(`all three answer ${bodies[0]}`)

    for (const s of [gateway, peer, node]) await round1(s, path, headers, WARMUP_S)
    const rounds: Record<string, Array<Round>> = { gateway: [], peer: [], node: [] }
    for (let i = 0; i < ROUNDS; i++) {
      for (const s of i % 2 ? [node, peer, gateway] : [gateway, peer, node]) {
        const r = await round1(s, path, headers, ROUND_S)
        if (r.non2xx || r.errors) throw new Error(`${s.name}: ${r.non2xx} non-2xx, ${r.errors} errors`)
        rounds[s.name]!.push(r)
        log(`round ${i + 1} ${s.name}: ${r.rps} req/s, ${r.cpuMsPerReq} ms CPU/req`)
      }
    }
    const gw = summary(rounds.gateway!)
    const pr = summary(rounds.peer!)
    const nd = summary(rounds.node!)
    const loadEnd = os.loadavg()[0]!
    const m = machine()
    const date = new Date().toISOString().slice(0, 10)
    const commit = (await gitHead())?.slice(0, 7) ?? "?"
    const entry = {
      date,
      machine: m,
      commit,
      rounds: ROUNDS,
      roundS: ROUND_S,
      gateway: gw,
      peer: pr,
      nodePeer: nd,
      perRound: rounds,
      load: [loadStart, loadEnd]
    }
    log(JSON.stringify({ gateway: gw, peer: pr, nodePeer: nd, load: [loadStart, loadEnd] }))
    const row =
      `| ${date} | ${m.cpu}, ${m.cores} cores, node ${m.node} | ${commit} | ${ROUNDS} × ${ROUND_S} s | ${gw.rps} | ${pr.rps} | ${
        round(gw.rps / pr.rps, 2)
      } | ${gw.cpuMsPerReq} | ${pr.cpuMsPerReq} | ${round(gw.cpuMsPerReq / pr.cpuMsPerReq, 2)} | ${
        loadStart.toFixed(2)
      } / ${loadEnd.toFixed(2)} | ${nd.rps} | ${round(gw.rps / nd.rps, 2)} | ${nd.cpuMsPerReq} |`
    recordRun("read-path", date, entry, HEADER, [row])
  } finally {
    for (const cleanup of cleanups) await cleanup().catch((e) => log(`cleanup: ${e}`))
  }
}

await main()
