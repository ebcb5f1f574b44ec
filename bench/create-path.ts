/**
 * Benchmark, the create path (targets: 0.6x pgbench's creates/s on one account,
 * 0.9x over 100; docs/performance.md): `POST /v1/video/tasks` through the
 * gateway on PostgreSQL (ROLE=api: no worker takes the tasks, so only the
 * create is measured) against pgbench running the gateway's own minimal
 * statement for one create (bench/create-path/create.sql: `create_task`,
 * which locks the account, checks its queue, the key's spend and the
 * balances, inserts the task and takes the charge, a transaction of its
 * own). Two loads, in interleaved rounds:
 *
 *  - one account: every create debits the same account row (a hot spot by
 *    nature: the pre-charge must see the balance the previous create left);
 *  - 100 accounts: creates spread over 100 accounts, each with its own key.
 *
 * A third side is a node:http + pg server making the same create by hand
 * (bench/create-peer.ts: the key's look-up, `create_task`, the NOTIFY, the
 * task's JSON), driven as the gateway is: what the gateway's layers cost on
 * top of the statement.
 *
 * The gateway, the peer and pgbench each use 10 connections (autocannon's and
 * pgbench's `-c 10`; the gateway's own pool is 10). Rates are the median
 * round; the gateway's CPU per create is its process's utime + stime.
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npx tsx bench/create-path.ts
 *   ROUNDS=3 ROUND_S=5 …   # defaults
 *   PROFILE=dir …          # the gateway runs with --cpu-prof into dir
 */
import * as os from "node:os"
import { join } from "node:path"
import {
  gatewayInstallation,
  measureRound,
  median,
  type Round,
  type Server,
  startGateway,
  startProcess,
  stop,
  summary,
  waitReady
} from "./servers.ts"
import { freePort, gitHead, machine, recordRun, ROOT, round, runPgbench, withClient } from "./support.ts"

const ADMIN_TOKEN = "adm_bench_0123456789abcdefghijklmnop"
const ROUNDS = Number(process.env.ROUNDS ?? 3)
const ROUND_S = Number(process.env.ROUND_S ?? 5)
const WARMUP_S = 2
const CONNECTIONS = 10
const SPREAD = 100
const MODEL = "provy-famS-2.0-480p"
const BODY = JSON.stringify({
  model: MODEL,
  operation: "generation",
  input: { prompt: "a lighthouse at dusk, waves breaking" },
  output: { duration: 4 }
})
const SQL_DIR = join(ROOT, "bench", "create-path")

const log = (message: string) => console.log(`[create-path] ${message}`)

/** pgbench's transactions per second (excluding connection time) for a script, `-c 10`, `durationS`. */
const pgbench = async (url: string, script: string, defines: Record<string, string>, durationS: number) =>
  (await runPgbench(url, [
    ...["-c", String(CONNECTIONS), "-j", "2", "-T", String(durationS)],
    ...["-f", join(SQL_DIR, script)]
  ], defines)).tps

const HEADER = `## create-path

\`POST /v1/video/tasks\` (${MODEL}, 4 s, no references) through the gateway on PostgreSQL
(\`node dist/src/main.js\`; the rows of 6c720ce and 6b28429 through tsx; \`ROLE=api\`, so no worker runs the tasks; create rate limit raised) against pgbench running the
gateway's own transaction for one create (\`bench/create-path/create.sql\`: at 6c720ce INSERT the task,
lock and debit the account, INSERT the ledger row, keep the charge on the task, COMMIT; in
later rows the account locked, checked and debited with its ledger row in one statement, then the
task INSERT with its charge, COMMIT; from 2026-11-29 on, one statement, \`create_task\`, which also
checks the account's queue and the key's spend, and whose INSERT's triggers keep the fair share's
lanes and the usage report's days). 10 connections
each, ${WARMUP_S} s warm-up, interleaved rounds; creates/s is the median round. "One account":
every create debits the same account row; "100 accounts": creates spread over 100 accounts
(pgbench picks the account by a random number in a lookup table, one more indexed SELECT than the
gateway makes; from 2026-11-23 19:40 on, in the one-account runs too). Load is the 1-minute load average at start / end (2 shared cores).

Run: \`DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npm run bench:create\`.

From 2026-11-29 on, the last three columns are the node+pg peer's (\`bench/create-peer.ts\`): its creates/s on one
account and on 100, the gateway's rate over the peer's on each, and the peer's CPU per create.

| Date | Machine | Commit | Rounds | One account: gateway / pgbench creates/s | Ratio | 100 accounts: gateway / pgbench creates/s | Ratio | Gateway CPU ms/create | Load start / end | Peer creates/s, one / 100 accounts | Gateway/peer, one / 100 | Peer CPU ms/create |
|---|---|---|---|---:|---:|---:|---:|---:|---|---|---|---:|
`

const main = async () => {
  const serverUrl = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test"
  const loadStart = os.loadavg()[0]!
  const cleanups: Array<() => Promise<unknown>> = []
  try {
    const { configDir, dataDir, databaseUrl } = await gatewayInstallation(serverUrl, "create", (limits) => {
      limits.rate_limits.create = { per_second: 1_000_000, burst: 1_000_000 }
    }, cleanups)
    const { admin, gateway } = await startGateway(
      { ROLE: "api", DATA_DIR: dataDir, CONFIG_DIR: configDir, DATABASE_URL: databaseUrl },
      ADMIN_TOKEN,
      cleanups,
      log
    )
    // Balances no run can exhaust: an insufficient balance would answer 402 and end nothing.
    const accounts = await Promise.all(Array.from({ length: SPREAD + 1 }, async (_, i) => {
      const account = await admin("/admin/v1/accounts", { name: `bench-${i}`, wallet_credits: 1e9 })
      const key = await admin(`/admin/v1/accounts/${account.id}/keys`, { kind: "model" })
      return { id: account.id as string, key: key.key as string, keyId: key.id as string }
    }))
    const [hot, ...spread] = accounts
    await withClient(databaseUrl, async (c) => {
      await c.query(`CREATE TABLE bench_accounts (n int PRIMARY KEY, id text NOT NULL, key_id text NOT NULL)`)
      // Row 0 is the hot account, rows 1 to 100 the spread ones (bench/create-path/create.sql).
      for (const [i, a] of accounts.entries()) {
        await c.query(`INSERT INTO bench_accounts VALUES ($1, $2, $3)`, [i, a.id, a.keyId])
      }
    })

    // What the gateway stores for one create, so pgbench writes rows of the same size.
    const probe = await fetch(gateway.url + "/v1/video/tasks", {
      method: "POST",
      headers: { authorization: `Bearer ${hot!.key}`, "content-type": "application/json" },
      body: BODY
    })
    const created = await probe.json() as any
    if (probe.status !== 202) throw new Error(`create: ${probe.status} ${JSON.stringify(created)}`)
    const stored = await withClient(databaseUrl, (c) =>
      c.query(
        `SELECT request::text AS request, channel, charged_wallet_micros + charged_subscription_micros AS micros
         FROM tasks WHERE id = $1`,
        [created.id]
      ))
    const row = stored.rows[0]
    const defines = { request: row.request.replaceAll("'", "''"), channel: row.channel, micros: String(row.micros) }
    log(`a create answers 202 ${created.status}; the task costs ${row.micros} µcredits on channel ${row.channel}`)

    const peerPort = await freePort()
    const peer = startProcess(
      "peer",
      ["--import", "tsx", "bench/create-peer.ts"],
      {
        PORT: String(peerPort),
        DATABASE_URL: databaseUrl,
        MODEL,
        REQUEST: row.request,
        MICROS: String(row.micros),
        CHANNEL: row.channel
      },
      peerPort,
      log
    )
    cleanups.unshift(() => stop(peer))
    await waitReady(peer, "/healthz")

    const headers = { "content-type": "application/json" }
    const serverRound = (server: Server, keys: ReadonlyArray<string>, durationS: number) => {
      let next = 0
      return measureRound(server, {
        path: "/v1/video/tasks",
        connections: CONNECTIONS,
        requests: [{
          method: "POST",
          body: BODY,
          headers,
          setupRequest: (request) => ({
            ...request,
            headers: { ...headers, authorization: `Bearer ${keys[next++ % keys.length]}` }
          })
        }]
      }, durationS)
    }
    const hotKeys = [hot!.key]
    const spreadKeys = spread.map((a) => a.key)
    const oneDefines = { ...defines, lo: "0", hi: "0" }
    const spreadDefines = { ...defines, lo: "1", hi: String(SPREAD) }

    const gatewayRound = (keys: ReadonlyArray<string>, durationS: number) => serverRound(gateway, keys, durationS)
    const peerRound = (keys: ReadonlyArray<string>, durationS: number) => serverRound(peer, keys, durationS)
    for (const keys of [hotKeys, spreadKeys]) {
      await gatewayRound(keys, WARMUP_S)
      await peerRound(keys, WARMUP_S)
    }
    await pgbench(databaseUrl, "create.sql", oneDefines, WARMUP_S)

    const rounds = {
      gatewayOne: [] as Array<Round>,
      gatewaySpread: [] as Array<Round>,
      peerOne: [] as Array<Round>,
      peerSpread: [] as Array<Round>
    }
    const pg = { one: [] as Array<number>, spread: [] as Array<number> }
    for (let i = 0; i < ROUNDS; i++) {
      const steps: Array<() => Promise<void>> = [
        async () => void rounds.gatewayOne.push(check(await gatewayRound(hotKeys, ROUND_S))),
        async () => void pg.one.push(await pgbench(databaseUrl, "create.sql", oneDefines, ROUND_S)),
        async () => void rounds.peerOne.push(check(await peerRound(hotKeys, ROUND_S))),
        async () => void rounds.gatewaySpread.push(check(await gatewayRound(spreadKeys, ROUND_S))),
        async () => void rounds.peerSpread.push(check(await peerRound(spreadKeys, ROUND_S))),
        async () =>
          void pg.spread.push(
            await pgbench(databaseUrl, "create.sql", spreadDefines, ROUND_S)
          )
      ]
      for (const step of i % 2 ? steps.reverse() : steps) await step()
      log(
        `round ${i + 1}: one account ${rounds.gatewayOne.at(-1)!.rps} vs peer ${rounds.peerOne.at(-1)!.rps} ` +
          `vs pgbench ${pg.one.at(-1)} /s; 100 accounts ${rounds.gatewaySpread.at(-1)!.rps} vs peer ` +
          `${rounds.peerSpread.at(-1)!.rps} vs pgbench ${pg.spread.at(-1)} /s`
      )
    }
    const one = summary(rounds.gatewayOne)
    const spreadSummary = summary(rounds.gatewaySpread)
    const pgOne = round(median(pg.one), 1)
    const pgSpread = round(median(pg.spread), 1)
    const cpu = summary([...rounds.gatewayOne, ...rounds.gatewaySpread]).cpuMsPerReq
    const peerOne = summary(rounds.peerOne)
    const peerSpread = summary(rounds.peerSpread)
    const peerCpu = summary([...rounds.peerOne, ...rounds.peerSpread]).cpuMsPerReq
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
      oneAccount: { gateway: one, pgbench: pgOne, perRound: { gateway: rounds.gatewayOne, pgbench: pg.one } },
      spread: {
        gateway: spreadSummary,
        pgbench: pgSpread,
        perRound: { gateway: rounds.gatewaySpread, pgbench: pg.spread }
      },
      peer: { one: peerOne, spread: peerSpread, perRound: { one: rounds.peerOne, spread: rounds.peerSpread } },
      gatewayCpuMsPerCreate: cpu,
      peerCpuMsPerCreate: peerCpu,
      load: [loadStart, loadEnd]
    }
    log(JSON.stringify({ one, pgOne, spread: spreadSummary, pgSpread, cpu, load: [loadStart, loadEnd] }))
    const tableRow =
      `| ${date} | ${m.cpu}, ${m.cores} cores, node ${m.node} | ${commit} | ${ROUNDS} × ${ROUND_S} s | ${one.rps} / ${pgOne} | ${
        round(one.rps / pgOne, 2)
      } | ${spreadSummary.rps} / ${pgSpread} | ${round(spreadSummary.rps / pgSpread, 2)} | ${cpu} | ${
        loadStart.toFixed(2)
      } / ${loadEnd.toFixed(2)} | ${peerOne.rps} / ${peerSpread.rps} | ${round(one.rps / peerOne.rps, 2)} / ${
        round(spreadSummary.rps / peerSpread.rps, 2)
      } | ${peerCpu} |`
    recordRun("create-path", date, entry, HEADER, [tableRow])
  } finally {
    for (const cleanup of cleanups) await cleanup().catch((e) => log(`cleanup: ${e}`))
  }
}

/** A round with a refused create measured something else than creates. */
const check = (r: Round) => {
  if (r.non2xx || r.errors) throw new Error(`gateway: ${r.non2xx} non-2xx, ${r.errors} errors`)
  return r
}

await main()
