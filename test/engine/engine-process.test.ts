import { readFileSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { QUEUED_CHANNEL } from "../../src/tasks/sql/notifyQueued.ts"
import { createAccount } from "../support/adminApi.ts"
import { checkBooks } from "../support/books.ts"
import { configWith } from "../support/config.ts"
import { backend } from "../support/database.ts"
import { eventually } from "../support/eventually.ts"
import { type Target } from "../support/http.ts"
import { installation as newInstallation, type Rows, withDatabase } from "../support/installation.ts"
import { kill, type LogLine, type Service, stop, waitForHealth, waitForLog } from "../support/process.ts"
import { count, createVideoTask, terminal, untilStatuses } from "../support/taskRuns.ts"
import { videoRequest } from "../support/tasks.ts"

/**
 * The task engine's promises with real processes and real signals: a worker
 * SIGKILLed with 20 tasks in flight loses none of them and bills each once;
 * two workers never run one task twice; a worker frozen past its lease is
 * refused when it wakes; a worker whose LISTEN connection is killed still
 * picks up work and listens again. Nothing here runs the engine in-process.
 */

const PG = backend === "postgresql"
const DEADLINE_MS = 90_000

// ---------------------------------------------------------------------------
// Processes, configuration and the database, per test

const running: Array<Service> = []
/** Every process a test can see, so a failing test can show what each one logged. */
const visible: Array<{ readonly role: string; readonly service: Service; readonly shared: boolean }> = []
afterEach(async (context) => {
  if (context.task.result?.state === "fail") {
    for (const { role, service } of visible) {
      const notable = service.output().split("\n").filter((l) => !l.includes("\"message\":\"request\"")).slice(-30)
      console.error(`--- ${role} (pid ${service.child.pid}) ---\n${notable.join("\n")}`)
    }
  }
  visible.splice(0, visible.length, ...visible.filter((v) => v.shared))
  // Whatever a test left running (it failed half-way) is killed; a stopped process is killed too.
  await Promise.all(running.splice(0).map(kill))
})

const configDirs: Array<string> = []
afterAll(() => {
  for (const dir of configDirs) rmSync(dir, { recursive: true, force: true })
})

/** A copy of `config/` with the engine's timing and the sandbox channel's settings replaced. */
const engineConfig = (engine: Record<string, number>, concurrency: number): string => {
  const dir = configWith("limits.json", (limits) => {
    limits.engine = engine
    for (const rate of Object.values(limits.rate_limits) as Array<any>) rate.per_second = rate.burst = 100_000
  })
  const models = JSON.parse(readFileSync(join(dir, "models.json"), "utf8"))
  models.channels = { ...models.channels, sandbox: { ...models.channels?.sandbox, concurrency } }
  writeFileSync(join(dir, "models.json"), JSON.stringify(models))
  configDirs.push(dir)
  return dir
}

/** One installation (test/support/installation.ts) whose processes this file shows on failure and kills after each test. */
const installation = () =>
  newInstallation((service, role, shared) => {
    if (!shared) running.push(service)
    visible.push({ role, service, shared })
  })

// ---------------------------------------------------------------------------
// Tasks over HTTP (test/support/taskRuns.ts)

const createTask = (target: Target, key: string, sandbox: Record<string, unknown> = {}) =>
  createVideoTask(target, key, videoRequest({ provider_options: { sandbox } }))
const until = (target: Target, key: string, ids: ReadonlyArray<string>, done: (s: Array<string>) => boolean) =>
  untilStatuses(target, key, ids, done, DEADLINE_MS)

const claimsIn = (service: Service): Array<LogLine> => service.logs().filter((l) => l.message === "task claimed")

// ---------------------------------------------------------------------------
// a) A crash with every task in flight

/**
 * Short leases, so the crash is noticed within seconds; room for all 20 tasks at once. Attempts to
 * spare: 20 ffmpeg renders at once on a 2-core machine that also runs other test files can starve
 * a process long enough to miss a 3 s lease; the task is then run again, and must still end once.
 */
const CRASH_ENGINE = { lease_s: 3, heartbeat_s: 1, poll_interval_ms: 200, reaper_interval_s: 1, max_attempts: 10 }
/**
 * On PGlite every statement of the process, heartbeats included, queues for its one embedded
 * connection on the main thread while 20 renders run: a 3 s lease was seen lost over and over
 * after the restart (attempts up to 9, six tasks still running at the deadline). 6 s still
 * notices the crash within seconds.
 */
const CRASH_ENGINE_PGLITE = { ...CRASH_ENGINE, lease_s: 6 }
const CRASH_TASKS = 20
/** Every fifth task fails by request, so refunds cross the crash too. */
const failsOnPurpose = (i: number) => i % 5 === 4
/** Long enough that all 20 are still running when the kill comes, even on a loaded machine. */
const IN_FLIGHT_DELAY_MS = 8_000
const GRANTED = { wallet: 100, subscription: 0.5 }

/** Creates the 20 tasks and waits until every one is in_progress; returns their ids and expected outcomes. */
const twentyInFlight = async (target: Target, keys: { model: { key: string }; resource: { key: string } }) => {
  // All at once, so the first is still running when the last is claimed.
  const ids = await Promise.all(Array.from({ length: CRASH_TASKS }, (_, i) =>
    createTask(target, keys.model.key, {
      delay_ms: IN_FLIGHT_DELAY_MS,
      ...(failsOnPurpose(i) ? { outcome: "fail" } : {})
    })))
  const expected = new Map(ids.map((id, i) => [id, failsOnPurpose(i) ? "failed" as const : "succeeded" as const]))
  await until(target, keys.resource.key, ids, (s) => s.every((x) => x === "in_progress"))
  return { ids, expected }
}

if (PG) {
  describe("task engine processes (postgresql)", { timeout: 120_000 }, () => {
    it("a) SIGKILL of the worker with 20 tasks in flight: a new worker finishes all, each billed and announced once", async () => {
      const site = await installation()
      try {
        const config = engineConfig(CRASH_ENGINE, 24)
        const [api, first] = await Promise.all([site.serve("api", config), site.worker(config)])
        const acct = await createAccount(site.target, {
          name: "crash",
          wallet_credits: GRANTED.wallet,
          subscription_credits: GRANTED.subscription
        })
        const { ids, expected } = await twentyInFlight(site.target, acct)
        expect(new Set(claimsIn(first.service).map((l) => l.annotations.task_id))).toEqual(new Set(ids))

        await kill(first.service)
        expect(first.service.child.signalCode).toBe("SIGKILL")
        const second = await site.worker(config)
        const final = await until(site.target, acct.resource.key, ids, (s) => s.every(terminal))
        expect(count(final)).toEqual({ succeeded: 16, failed: 4 })

        // The new worker ran every task again, as a later attempt of the same task.
        const retaken = claimsIn(second.service)
        expect(new Set(retaken.map((l) => l.annotations.task_id))).toEqual(new Set(ids))
        expect(retaken.every((l) => l.annotations.attempt >= 2)).toBe(true)

        const tasks = await withDatabase(
          { dbUrl: site.db.url, dataDir: site.dataDir },
          (rows) => checkBooks(rows, acct.id, GRANTED, expected)
        )
        expect(tasks.every((t) => t.attempt >= 2)).toBe(true)
        await Promise.all([stop(api), stop(second.service)])
      } finally {
        await site.close()
      }
    })

    describe("replicas on one database", () => {
      // One API process and one database for b–d; each test brings its own workers and account.
      let site: Awaited<ReturnType<typeof installation>>
      let api: Service
      beforeAll(async () => {
        site = await installation()
        api = site.launch("api", engineConfig({}, 2), { shared: true })
        expect(await waitForHealth(api, 60_000), api.output()).toBe(true)
      }, 90_000)
      afterAll(() => site?.close())

      it("b) two workers share 30 tasks: each is claimed once, by one worker, at attempt 1, and succeeds", async () => {
        const config = engineConfig({ lease_s: 10, heartbeat_s: 1, poll_interval_ms: 200, reaper_interval_s: 1 }, 2)
        const workers = await Promise.all([site.worker(config), site.worker(config)])
        expect(workers[0].workerId).not.toBe(workers[1].workerId)
        const acct = await createAccount(site.target, { name: "two-workers", wallet_credits: GRANTED.wallet })
        const ids = await Promise.all(Array.from({ length: 30 }, () => createTask(site.target, acct.model.key)))
        const final = await until(site.target, acct.resource.key, ids, (s) => s.every(terminal))
        expect(count(final)).toEqual({ succeeded: 30 })

        const claimedBy = workers.map((w) => claimsIn(w.service))
        for (const [i, lines] of claimedBy.entries()) {
          expect(lines.every((l) => l.annotations.worker_id === workers[i]!.workerId)).toBe(true)
        }
        for (const id of ids) {
          const lines = claimedBy.flat().filter((l) => l.annotations.task_id === id)
          expect(lines, id).toHaveLength(1)
          expect(lines[0]!.annotations.attempt, id).toBe(1)
        }
        // Both took part: each had work while the other was busy.
        expect(claimedBy.every((lines) => lines.length > 0)).toBe(true)

        const tasks = await withDatabase(
          { dbUrl: site.db.url, dataDir: site.dataDir },
          (rows) =>
            checkBooks(
              rows,
              acct.id,
              { wallet: GRANTED.wallet, subscription: 0 },
              new Map(ids.map((id) => [id, "succeeded"]))
            )
        )
        expect(tasks.map((t) => t.attempt)).toEqual(ids.map(() => 1))
        await Promise.all(workers.map((w) => stop(w.service)))
      })

      it("c) a worker frozen (SIGSTOP) past its lease is refused when it wakes; the task ends once, by the other worker", async () => {
        const config = engineConfig({ lease_s: 2, heartbeat_s: 0.5, poll_interval_ms: 200, reaper_interval_s: 1 }, 2)
        const db = { dbUrl: site.db.url, dataDir: site.dataDir }
        const a = await site.worker(config)
        const acct = await createAccount(site.target, { name: "stale", wallet_credits: GRANTED.wallet })
        const id = await createTask(site.target, acct.model.key, { delay_ms: 6_000 })
        await waitForLog(a.service, (l) => l.message === "task claimed" && l.annotations.task_id === id, 30_000)
        a.service.child.kill("SIGSTOP")

        let b: Awaited<ReturnType<typeof site.worker>>
        try {
          // B's reaper finds A's lease expired and requeues the task; B claims it as attempt 2.
          b = await site.worker(config)
          const claimed = await waitForLog(
            b.service,
            (l) => l.message === "task claimed" && l.annotations.task_id === id,
            30_000
          )
          expect(claimed.annotations.attempt).toBe(2)
          const [row] = await withDatabase(
            db,
            (rows) => rows(`SELECT status, attempt, lease_owner FROM tasks WHERE id = $1`, [id])
          )
          expect(row).toMatchObject({ attempt: 2, lease_owner: b.workerId })
        } finally {
          // A wakes while B still runs the task (its 6 s delay has just begun), so only the attempt
          // guard stands between A's attempt-1 writes and the task.
          a.service.child.kill("SIGCONT")
        }

        // A's heartbeat (or, had its generation won the race, its outcome write) is refused; its run ends there.
        const refused = await waitForLog(
          a.service,
          (l) =>
            l.annotations.task_id === id && typeof l.message === "string" &&
            (l.message.startsWith("lease lost") || l.message.startsWith("stale claim")),
          30_000
        )
        expect(refused.annotations.attempt).toBe(1)

        // B finishes it: one "task finished", for the task's last attempt (2, unless a loaded machine
        // made B miss its own 2 s lease too and a later attempt finished it), never for A's attempt 1.
        await until(site.target, acct.resource.key, [id], (s) => s.every(terminal))
        await Promise.all([stop(a.service), stop(b.service)])
        const finished = [a.service, b.service].flatMap((w) =>
          w.logs().filter((l) => l.message === "task finished" && l.annotations.task_id === id)
        )
        const tasks = await withDatabase(
          db,
          (rows) => checkBooks(rows, acct.id, { wallet: GRANTED.wallet, subscription: 0 }, new Map([[id, "succeeded"]]))
        )
        expect(tasks[0].attempt).toBeGreaterThanOrEqual(2)
        expect(finished.map((l) => l.annotations)).toEqual([
          expect.objectContaining({ attempt: tasks[0].attempt, status: "succeeded" })
        ])
      })

      it("d) the worker's LISTEN connection killed: new tasks are still picked up (polling), and the listener comes back", async () => {
        const config = engineConfig({ lease_s: 10, heartbeat_s: 1, poll_interval_ms: 500, reaper_interval_s: 1 }, 2)
        // The worker's LISTEN backends (the task queue's, and any other its fibers keep); the API listens to nothing.
        const listening = (rows: Rows) =>
          rows(`SELECT pid, query FROM pg_stat_activity
                WHERE datname = current_database() AND query ILIKE 'LISTEN%' ORDER BY query`)
            .then((r) => r.map((x) => ({ pid: x.pid as number, query: x.query as string })))
        const tasksListener = `LISTEN "${QUEUED_CHANNEL}"`
        const db = { dbUrl: site.db.url, dataDir: site.dataDir }

        const w = await site.worker(config)
        const acct = await createAccount(site.target, { name: "listener", wallet_credits: GRANTED.wallet })
        const before = await eventually(
          () => withDatabase(db, listening).then((l) => (l.some((x) => x.query === tasksListener) ? l : undefined)),
          "the worker's LISTEN backend"
        )
        const terminated = await withDatabase(
          db,
          (rows) =>
            rows(`SELECT pg_terminate_backend(pid) AS done FROM pg_stat_activity
                WHERE datname = current_database() AND query ILIKE 'LISTEN%'`)
        )
        expect(terminated).toEqual(before.map(() => ({ done: true })))

        const id = await createTask(site.target, acct.model.key)
        expect(await until(site.target, acct.resource.key, [id], (s) => s.every(terminal))).toEqual(["succeeded"])

        // The worker noticed and listens again, on new connections.
        await waitForLog(w.service, (l) => l.message === "task listener lost; polling until it is back", 30_000)
        const after = await eventually(
          () =>
            withDatabase(db, listening).then((l) =>
              l.length === before.length && l.every((x) => !before.some((b) => b.pid === x.pid)) ? l : undefined
            ),
          "new LISTEN backends"
        )
        expect(after.map((x) => x.query)).toEqual(before.map((x) => x.query))
        const next = await createTask(site.target, acct.model.key)
        expect(await until(site.target, acct.resource.key, [next], (s) => s.every(terminal))).toEqual(["succeeded"])
        await stop(w.service)
      })
    })
  })
} else {
  // PGlite is one process's embedded database: a second process cannot open it, so
  // the multi-replica stories (b: two workers, c: a stale worker beside a live one,
  // d: a LISTEN backend to terminate) exist only on PostgreSQL. The crash story
  // does exist: one ROLE=all process, SIGKILLed and restarted on the same DATA_DIR.
  describe("task engine processes (pglite)", { timeout: 240_000 }, () => {
    it("a) SIGKILL of the process with 20 tasks in flight: restarted on its DATA_DIR, it finishes all, each billed and announced once", async () => {
      const site = await installation()
      try {
        const config = engineConfig(CRASH_ENGINE_PGLITE, 24)
        const first = await site.serve("all", config)
        const acct = await createAccount(site.target, {
          name: "crash",
          wallet_credits: GRANTED.wallet,
          subscription_credits: GRANTED.subscription
        })
        const { ids, expected } = await twentyInFlight(site.target, acct)
        expect(new Set(claimsIn(first).map((l) => l.annotations.task_id))).toEqual(new Set(ids))

        await kill(first)
        expect(first.child.signalCode).toBe("SIGKILL")
        const second = await site.serve("all", config)
        const final = await until(site.target, acct.resource.key, ids, (s) => s.every(terminal))
        expect(count(final)).toEqual({ succeeded: 16, failed: 4 })
        const retaken = claimsIn(second)
        expect(new Set(retaken.map((l) => l.annotations.task_id))).toEqual(new Set(ids))
        expect(retaken.every((l) => l.annotations.attempt >= 2)).toBe(true)

        await stop(second)
        expect(await second.exited).toBe(0)
        const tasks = await withDatabase(
          { dbUrl: undefined, dataDir: site.dataDir },
          (rows) => checkBooks(rows, acct.id, GRANTED, expected)
        )
        expect(tasks.every((t) => t.attempt >= 2)).toBe(true)
      } finally {
        await site.close()
      }
    })
  })
}
