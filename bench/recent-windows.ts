/**
 * Benchmark, the windowed reads against a long history (migration 20): the
 * console's overview (console/Overview.ts: tasks per hour, time to result
 * and failures of the last 24 hours, credits per day of the last 14) and
 * the channel view's reads (ops/ChannelActivity.ts: the last 15 minutes,
 * each channel's last upstream answer), as the service runs them, on two
 * PostgreSQL databases holding the same history: one migrated to 19 (the
 * reads scan whole tables), one to 20 (each read bounded by an index). What
 * the indexes cost is measured on the same two: the gateway's own create
 * transaction (bench/create-path/create.sql) run by pgbench, 10 connections.
 * Every measurement alternates between the two databases, round by round.
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npx tsx bench/recent-windows.ts
 *   HISTORY=1000000 ROUNDS=5 READS=5 ROUND_S=5 …   # defaults
 */
import * as PgClient from "@effect/sql-pg/PgClient"
import { Effect, ManagedRuntime, Redacted } from "effect"
import * as os from "node:os"
import { join } from "node:path"
import { overviewWith } from "../src/console/Overview.ts"
import { migrations } from "../src/migrations/index.ts"
import { channelActivity } from "../src/ops/ChannelActivity.ts"
import { CHANNELS, fillHistory } from "./history.ts"
import { median } from "./servers.ts"
import { gitHead, machine, recordRun, ROOT, round, runPgbench, withClient, withDatabase } from "./support.ts"

const HISTORY = Number(process.env.HISTORY ?? 1_000_000)
const ROUNDS = Number(process.env.ROUNDS ?? 5)
const READS = Number(process.env.READS ?? 5)
const ROUND_S = Number(process.env.ROUND_S ?? 5)
const WINDOWS_MIGRATION = 20

const log = (message: string) => console.log(`[recent-windows] ${message}`)

type Side = "before" | "after"
const SIDES: ReadonlyArray<Side> = ["before", "after"]

const HEADER = `## recent-windows

The console's overview (tasks per hour, time to result and failures of the last 24 hours, credits
per day of the last 14) and the channel view's reads (last 15 minutes, each channel's last upstream
answer), run as the service runs them (\`console/Overview.ts\`, \`ops/ChannelActivity.ts\`) on two
PostgreSQL databases holding the same history (tasks over 90 days, a charge each, a refund per
failed task, an attempt per started task): one migrated to 19, one to 20 (the windows' indexes).
Read times are the median of every read (\`READS\` per round, rounds alternating between the
two); then creates/s, pgbench running the gateway's create transaction
(\`bench/create-path/create.sql\`, 10 connections, 100 accounts), median of rounds alternating
between the two (after the reads: the creates' tasks would land in the windows read). Migration 20's
time is on the filled history. Load is the 1-minute load average at start / end (2 shared cores).

Run: \`DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npm run bench:windows\`.

| Date | Machine | Commit | History (tasks) | Rounds | Overview ms: 19 / 20 | Channel view ms: 19 / 20 | Creates/s: 19 / 20 | Migration 20 s | Load start / end |
|---|---|---|---:|---|---:|---:|---:|---:|---|
`

const timed = async (f: () => Promise<unknown>) => {
  const started = performance.now()
  await f()
  return performance.now() - started
}

const main = async () => {
  const serverUrl = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test"
  const loadStart = os.loadavg()[0]!
  const nowS = Math.floor(Date.now() / 1000)
  const urls = Object.fromEntries(
    SIDES.map((side) => [side, withDatabase(serverUrl, `bench_windows_${side}`)])
  ) as Record<
    Side,
    string
  >
  const runtimes: Array<ManagedRuntime.ManagedRuntime<unknown, unknown>> = []
  try {
    let migrationS = 0
    for (const side of SIDES) {
      await withClient(serverUrl, async (c) => {
        await c.query(`DROP DATABASE IF EXISTS bench_windows_${side}`)
        await c.query(`CREATE DATABASE bench_windows_${side}`)
      })
      await withClient(urls[side], async (c) => {
        for (const [id, , statements] of migrations) {
          if (id >= WINDOWS_MIGRATION) continue
          for (const statement of statements) await c.query(statement)
        }
        const started = performance.now()
        for (const statement of fillHistory(nowS, HISTORY)) await c.query(statement)
        log(`${side}: ${HISTORY} tasks filled in ${round((performance.now() - started) / 1000)} s`)
        if (side === "after") {
          // As an upgrade meets it: the indexes built over the history already there.
          const at = performance.now()
          for (const [id, , statements] of migrations) {
            if (id >= WINDOWS_MIGRATION) { for (const statement of statements) await c.query(statement) }
          }
          migrationS = round((performance.now() - at) / 1000, 1)
          log(`after: migration ${WINDOWS_MIGRATION} took ${migrationS} s`)
        }
        await c.query("VACUUM ANALYZE")
      })
    }

    const runtimeOf = (side: Side) => {
      const runtime = ManagedRuntime.make(PgClient.layer({ url: Redacted.make(urls[side]), maxConnections: 2 }))
      runtimes.push(runtime as ManagedRuntime.ManagedRuntime<unknown, unknown>)
      return runtime
    }
    const run = Object.fromEntries(SIDES.map((side) => [side, runtimeOf(side)])) as Record<
      Side,
      ReturnType<typeof runtimeOf>
    >
    const reads = {
      overview: (side: Side) => run[side].runPromise(overviewWith([])),
      channels: (side: Side) => run[side].runPromise(Effect.orDie(channelActivity(CHANNELS, Date.now())))
    }
    // The same answers from both: the indexes change how the rows are found, not which.
    for (const name of ["overview", "channels"] as const) {
      const [a, b] = await Promise.all(SIDES.map((side) => reads[name](side)))
      const strip = (x: unknown) => JSON.stringify(x, (k, v) => (k === "generated_at" ? undefined : v))
      if (strip(a) !== strip(b)) throw new Error(`${name}: the two databases answer differently`)
    }

    const defines = {
      request: JSON.stringify({ model: "provy-famS-2.0-480p", input: { prompt: "bench" } }),
      channel: "sandbox",
      micros: "500000",
      lo: "1",
      hi: "100"
    }
    const creates = (side: Side, durationS: number) =>
      runPgbench(urls[side], [
        ...["-c", "10", "-j", "2", "-T", String(durationS)],
        ...["-f", join(ROOT, "bench", "create-path", "create.sql")]
      ], defines).then((r) => r.tps)
    const ms = { overview: { before: [], after: [] }, channels: { before: [], after: [] } } as Record<
      "overview" | "channels",
      Record<Side, Array<number>>
    >
    const tps: Record<Side, Array<number>> = { before: [], after: [] }
    // The reads first: the creates' tasks would land in the windows read and grow them round by round.
    for (let i = 0; i < ROUNDS; i++) {
      for (const side of i % 2 ? [...SIDES].reverse() : SIDES) {
        for (let r = 0; r < READS; r++) {
          ms.overview[side].push(await timed(() => reads.overview(side)))
          ms.channels[side].push(await timed(() => reads.channels(side)))
        }
      }
      log(
        `reads, round ${i + 1}: ${
          SIDES.map((side) =>
            `${side}: overview ${round(median(ms.overview[side].slice(-READS)), 1)} ms, channels ${
              round(median(ms.channels[side].slice(-READS)), 1)
            } ms`
          ).join("; ")
        }`
      )
    }
    for (const side of SIDES) await creates(side, 2)
    for (let i = 0; i < ROUNDS; i++) {
      for (const side of i % 2 ? [...SIDES].reverse() : SIDES) tps[side].push(await creates(side, ROUND_S))
      log(`creates, round ${i + 1}: ${SIDES.map((side) => `${side}: ${tps[side].at(-1)}/s`).join("; ")}`)
    }

    const med = (xs: ReadonlyArray<number>) => round(median(xs), 1)
    const loadEnd = os.loadavg()[0]!
    const m = machine()
    const date = new Date().toISOString().slice(0, 10)
    const commit = (await gitHead())?.slice(0, 7) ?? "?"
    const entry = {
      date,
      machine: m,
      commit,
      history: HISTORY,
      rounds: ROUNDS,
      reads: READS,
      roundS: ROUND_S,
      migrationS,
      overviewMs: { before: med(ms.overview.before), after: med(ms.overview.after) },
      channelViewMs: { before: med(ms.channels.before), after: med(ms.channels.after) },
      createsPerS: { before: med(tps.before), after: med(tps.after) },
      perRound: { ms, tps },
      load: [loadStart, loadEnd]
    }
    log(JSON.stringify({ ...entry, perRound: undefined }))
    const row =
      `| ${date} | ${m.cpu}, ${m.cores} cores, node ${m.node} | ${commit} | ${HISTORY} | ${ROUNDS} × (${READS} reads, ${ROUND_S} s) | ${entry.overviewMs.before} / ${entry.overviewMs.after} | ${entry.channelViewMs.before} / ${entry.channelViewMs.after} | ${entry.createsPerS.before} / ${entry.createsPerS.after} | ${migrationS} | ${
        loadStart.toFixed(2)
      } / ${loadEnd.toFixed(2)} |`
    recordRun("recent-windows", date, entry, HEADER, [row])
  } finally {
    for (const runtime of runtimes) await runtime.dispose().catch(() => undefined)
    await withClient(serverUrl, async (c) => {
      for (const side of SIDES) await c.query(`DROP DATABASE IF EXISTS bench_windows_${side}`)
    }).catch((e) => log(`cleanup: ${e}`))
  }
}

main().catch((e) => {
  console.error(e)
  process.exitCode = 1
})
