/**
 * Benchmark, the operator's usage report over a long history (docs/operating.md,
 * Money): a PostgreSQL database holding HISTORY tasks (1,000,000) over 90 days
 * (bench/history.ts: a charge each, a refund per failed task, an attempt per
 * started task, each given an upstream cost as a billing provider's), written
 * before the migrations that keep the report's sums (21 on: the lanes, 25:
 * `usage_daily`), which are then applied as an upgrade meets them and timed.
 * Then the report as the service reads it (src/usage/sql/usageRows.ts, and
 * the losses' src/usage/sql/lossRows.ts), each query READS times (median):
 *
 *  - 30 days grouped by day and model (the figure to keep under one second);
 *  - 30 days by account and model; 90 days by day; 90 days in one total row;
 *  - the losses of the last 30 days (read from the attempts, not the sums).
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npx tsx bench/usage-report.ts
 *   HISTORY=1000000 READS=5 …   # defaults
 */
import { SqlClient } from "@effect/sql"
import * as PgClient from "@effect/sql-pg/PgClient"
import { Effect, ManagedRuntime, Redacted } from "effect"
import * as os from "node:os"
import { migrations } from "../src/migrations/index.ts"
import { lossRows } from "../src/usage/sql/lossRows.ts"
import { usageRows } from "../src/usage/sql/usageRows.ts"
import type { GroupKey } from "../src/usage/UsageQuery.ts"
import { fillHistory } from "./history.ts"
import { median } from "./servers.ts"
import { gitHead, machine, machineLine, recordRun, round, withClient, withDatabase } from "./support.ts"

const HISTORY = Number(process.env.HISTORY ?? 1_000_000)
const READS = Number(process.env.READS ?? 5)
/** The first migration of this wave: everything from it on is applied over the history, as an upgrade would. */
const FIRST_NEW = 21
/** Where the attempts' cost columns exist, and the costs are written before the sums are made. */
const COSTS_MIGRATION = 24

const log = (message: string) => console.log(`[usage-report] ${message}`)

const main = async () => {
  const serverUrl = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test"
  const loadStart = os.loadavg()[0]!
  const nowS = Math.floor(Date.now() / 1000)
  const name = `bench_usage_${Date.now().toString(36)}`
  const url = withDatabase(serverUrl, name)
  await withClient(serverUrl, (c) => c.query(`CREATE DATABASE ${name}`))
  const runtime = ManagedRuntime.make(PgClient.layer({ url: Redacted.make(url), maxConnections: 2 }))
  try {
    const migrationS: Record<number, number> = {}
    await withClient(url, async (c) => {
      for (const [id, , statements] of migrations) {
        if (id < FIRST_NEW) { for (const statement of statements) await c.query(statement) }
      }
      const started = performance.now()
      for (const statement of fillHistory(nowS, HISTORY)) await c.query(statement)
      log(`${HISTORY} tasks filled in ${round((performance.now() - started) / 1000)} s`)
      for (const [id, , statements] of migrations) {
        if (id < FIRST_NEW) continue
        const at = performance.now()
        for (const statement of statements) await c.query(statement)
        migrationS[id] = round((performance.now() - at) / 1000, 1)
        if (id === COSTS_MIGRATION) {
          // What providers billed: 0.3 a started attempt, none for the failed ones (as fal bills).
          await c.query(`UPDATE task_attempts a SET cost_micros = 300000, billed = (t.status = 'succeeded')
            FROM tasks t WHERE t.id = a.task_id`)
        }
      }
      log(`migrations from ${FIRST_NEW}: ${JSON.stringify(migrationS)} s`)
      await c.query("VACUUM ANALYZE")
    })

    const timed = async (f: Effect.Effect<unknown, unknown, SqlClient.SqlClient>) => {
      const ms: Array<number> = []
      let rows = 0
      for (let i = 0; i < READS; i++) {
        const started = performance.now()
        const result = await runtime.runPromise(f) as ReadonlyArray<unknown>
        ms.push(performance.now() - started)
        rows = result.length
      }
      return { ms: round(median(ms), 1), rows }
    }
    const report = (days: number, groupBy: ReadonlyArray<GroupKey>) =>
      timed(
        Effect.flatMap(SqlClient.SqlClient, (sql) =>
          usageRows(sql, { from: nowS - days * 86_400, to: nowS, groupBy, limit: 10_000, after: undefined }))
      )
    const reads = {
      dayModel30: await report(30, ["day", "model"]),
      accountModel30: await report(30, ["account", "model"]),
      day90: await report(90, ["day"]),
      total90: await report(90, []),
      losses30: await timed(
        Effect.flatMap(
          SqlClient.SqlClient,
          (sql) => lossRows(sql, { from: nowS - 30 * 86_400, to: nowS, limit: 100, before: undefined })
        )
      )
    }
    log(JSON.stringify(reads))
    const date = new Date().toISOString().slice(0, 10)
    const entry = {
      date,
      machine: machine(),
      commit: (await gitHead())?.slice(0, 7) ?? null,
      history: HISTORY,
      reads,
      migrationS,
      load: { start: round(loadStart, 2), end: round(os.loadavg()[0]!, 2) }
    }
    recordRun("usage-report", date, entry, HEADER, [
      `| ${date} | ${machineLine()} | ${entry.commit} | ${HISTORY} | ${reads.dayModel30.ms} (${reads.dayModel30.rows}) | ${reads.accountModel30.ms} (${reads.accountModel30.rows}) | ${reads.day90.ms} | ${reads.total90.ms} | ${reads.losses30.ms} | ${
        migrationS[21]
      } / ${migrationS[25]} | ${entry.load.start} / ${entry.load.end} |`
    ])
  } finally {
    await runtime.dispose()
    await withClient(serverUrl, (c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`))
  }
}

const HEADER = `## usage-report

The operator's usage report (\`src/usage/sql/usageRows.ts\`, reading \`usage_daily\`) and losses
(\`src/usage/sql/lossRows.ts\`, reading the attempts) over a history of N tasks across 90 days
(\`bench/history.ts\`), written before the migrations that keep the sums (21 on) and then migrated as an
upgrade would be. Read times are medians of 5 (ms; rows returned in brackets); the migrations' times are
those of 21 (the lanes' backfill) and 25 (the usage days' backfill) over that history. Load is the
1-minute load average at start / end (2 shared cores).

Run: \`DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npx tsx bench/usage-report.ts\`.

| Date | Machine | Commit | History (tasks) | 30 d by day, model | 30 d by account, model | 90 d by day | 90 d total | Losses 30 d | Migration 21 / 25 s | Load start / end |
|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|
`

main().catch((e) => {
  console.error(e)
  process.exitCode = 1
})
