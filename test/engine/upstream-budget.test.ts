// Runs alone: it counts the requests a fake upstream sees in each second, which a loaded machine bunches.
import { rmSync } from "node:fs"
import { afterAll, afterEach, describe, expect, it } from "vitest"
import { GatewayError } from "../../src/client/Errors.ts"
import { busiest } from "../fakes/ark.ts"
import { createAccount } from "../support/adminApi.ts"
import { api } from "../support/api.ts"
import { ARK_KEY, UPSTREAM } from "../support/ark.ts"
import { type ArkProcess, startArkProcess } from "../support/arkProcess.ts"
import { alsoWith, configWith } from "../support/config.ts"
import { backend } from "../support/database.ts"
import { eventually } from "../support/eventually.ts"
import { ADMIN_TOKEN } from "../support/gateway.ts"
import type { Target } from "../support/http.ts"
import { type Installation, installation } from "../support/installation.ts"
import { samplesOf, valueOf } from "../support/metrics.ts"
import { metricsText } from "../support/opsApi.ts"
import type { Service } from "../support/process.ts"
import { videoRequest } from "../support/tasks.ts"

/**
 * A channel's upstream request budget is kept by every replica together
 * (docs/engine.md, The upstream request budget). On PostgreSQL two worker
 * processes and an API process share one `ark` channel with a budget of 20
 * requests a second; on the embedded PGlite (one process per database) one
 * process keeps it alone. 2,000 tasks go through the fake Ark, which stamps
 * every API request as it arrives (in a process of its own, so the test's
 * work never delays a stamp): in no one-second window (sliding) does it see
 * more than 22, every task has exactly one upstream task and ends as its
 * upstream said, and a burst of 429s lowers the rate the fake sees after it.
 * Creates take most of the budget here (Ark's list asks about 100 tasks in
 * one request), so the burst lands on a channel that is using all of it.
 */

const TASKS = 2000
const BUDGET = 20
/** The most a one-second window may hold: the budget, and two requests for the timers' and sockets' jitter. */
const MOST_IN_A_SECOND = 22
const MODEL = "provy-famS-2.0-480p"
const CHANNEL = "byteplus"
/** Every tenth task fails upstream; the rest succeed at their second poll. */
const failsUpstream = (n: number) => n % 10 === 7
/**
 * The burst: every request of BURST_MS answered 429, each asking to wait RETRY_AFTER_S. The rate is halved by the
 * first 429, and again by each 429 to a request paced at the lowered rate (one a Retry-After later).
 */
const BURST_MS = 3000
const RETRY_AFTER_S = 1
/**
 * Creates upstream before the burst: 15 s of a channel using its whole budget. The callers create faster than the
 * budget lets the channel send, so the channel has a queue the whole time and the seconds before the burst measure
 * its rate, not the callers'.
 */
const CREATES_BEFORE_BURST = 300
/** Creates still to go upstream when the burst comes, so the seconds after it are busy too. */
const LEFT_AT_BURST = 300
/**
 * Creates in flight at once from the callers: enough to keep ahead of the budget, few enough to leave the 2 cores
 * to the gateway's processes (16 made them late enough to send paced requests together).
 */
const CALLERS = 4
/** The windows compared before and after the burst. */
const COMPARED_MS = 5000
const DEADLINE_MS = 600_000

let fake: ArkProcess | undefined
let site: Installation | undefined
const configs: Array<string> = []
const processes: Array<Service> = []
afterEach(async (context) => {
  if (context.task.result?.state === "fail") {
    for (const service of processes) console.error(service.output().split("\n").slice(-30).join("\n"))
  }
  await site?.close()
  await fake?.close()
})
afterAll(() => configs.forEach((dir) => rmSync(dir, { recursive: true, force: true })))

const promptOf = (n: number) => `a lighthouse, take ${n}${failsUpstream(n) ? ", failing" : ""}`
const numberOf = (prompt: string) => Number(/take (\d+)/.exec(prompt)?.[1])

const budgetConfig = (baseUrl: string) => {
  const dir = configWith("models.json", (models) => {
    models.channels[CHANNEL] = {
      adapter: "ark",
      base_url: baseUrl,
      credentials: { api_key: { env: "ARK_KEY" } },
      concurrency: 200,
      timeouts: { submit_s: 10, poll_s: 5 },
      requests_per_second: BUDGET
    }
    models.models[MODEL].channels = [{ channel: CHANNEL, upstream_model: UPSTREAM }]
  })
  configs.push(dir)
  return alsoWith(dir, "limits.json", (limits) => {
    // Enough retries of a refused create to outlast the burst (each waits the Retry-After at least).
    limits.engine = { poll_interval_ms: 250, heartbeat_s: 5, lease_s: 30, retry_base_ms: 100, generate_retries: 8 }
    for (const rate of Object.values(limits.rate_limits) as Array<any>) rate.burst = rate.per_second = 100_000
  })
}

/** The samples of one replica's `/metrics`. */
const scrapeOf = async (target: Target) => samplesOf((await metricsText(target, ADMIN_TOKEN)).body)

describe(`the upstream request budget across processes (${backend})`, () => {
  it(
    `${TASKS} tasks at ${BUDGET} requests a second: never more than ${MOST_IN_A_SECOND} in a second, each task once upstream, a 429 burst slows the rate`,
    async () => {
      const started = Date.now()
      fake = await startArkProcess([ARK_KEY], [
        {
          pattern: "failing$",
          scenario: {
            queued: 1,
            running: 0,
            end: "failed",
            error: { code: "InternalServiceError", message: "internal" }
          }
        },
        { pattern: ".", scenario: { queued: 1, running: 0 } }
      ])
      site = await installation((service) => processes.push(service))
      const config = budgetConfig(fake.url)
      const options = { env: { ARK_KEY } }
      const workers: Array<Target> = []
      if (backend === "postgresql") {
        await site.serve("api", config, options)
        for (let i = 0; i < 2; i++) workers.push((await site.worker(config, options)).ops)
      } else {
        await site.serve("all", config, options)
        workers.push(site.target)
      }

      const acct = await createAccount(site.target, { name: "budget", wallet_credits: 10_000 })
      const tasks = api(site.target, acct)
      const ids = new Map<string, number>()
      // A create that met a conflict in the database and answered 500 is sent again with its Idempotency-Key, as a
      // client does: it creates the task once.
      const create = async (n: number) => {
        for (let tries = 1;; tries++) {
          try {
            const request = videoRequest({ model: MODEL, input: { prompt: promptOf(n) } })
            return await tasks.createVideo(request, { idempotencyKey: `budget-${n}` })
          } catch (e) {
            if (tries >= 5 || !(e instanceof GatewayError) || e.status !== 500) throw e
          }
        }
      }
      // CALLERS at a time, each taking the next number: the channel has a queue to work through well before the burst.
      let next = 0
      const creating = Promise.all(Array.from({ length: CALLERS }, async () => {
        for (let n = next++; n < TASKS; n = next++) ids.set((await create(n)).id, n)
      }))

      // The burst, once the channel has used its budget for a while: every request for a while, whatever it asks, is
      // answered 429.
      await eventually(async () => (await fake!.creates()) >= CREATES_BEFORE_BURST, "creates before the burst", {
        deadlineMs: 120_000,
        intervalMs: 200
      })
      expect(TASKS - (await fake.creates())).toBeGreaterThanOrEqual(LEFT_AT_BURST)
      await fake.throttle(BURST_MS, String(RETRY_AFTER_S))
      await eventually(async () => (await fake!.throttledCount()) > 0, "the burst answered", { deadlineMs: 60_000 })
      // Every replica paces the channel at the rate the database holds: lowered for all of them.
      const lowered = await eventually(
        async () => {
          const rate = valueOf(await scrapeOf(site!.target), "mtg_upstream_rate_requests_per_second", {
            channel: CHANNEL
          })
          return rate !== undefined && rate < BUDGET && rate
        },
        "the channel's rate lowered",
        { deadlineMs: 30_000 }
      )

      await creating
      // Every task ends: nothing left in the engine's states on the channel (the gauge reads the database).
      await eventually(
        async () => {
          const samples = await scrapeOf(site!.target)
          const left = ["available", "running", "waiting", "polling", "storing"].map((state) =>
            valueOf(samples, "mtg_tasks", { state, channel: CHANNEL }) ?? 0
          )
          return left.every((n) => n === 0)
        },
        "every task ended",
        { deadlineMs: DEADLINE_MS, intervalMs: 2000 }
      )

      // Never more than the budget (and the jitter allowed) in any one-second window, as the fake counted them.
      const seen = await fake.snapshot()
      const arrivals = seen.requests.map((r) => r.at).sort((a, b) => a - b)
      const between = (from: number, to: number) => arrivals.filter((at) => at >= from && at < to).length
      const busiestSecond = busiest(arrivals, 1000)
      const firstThrottled = seen.throttled[0]!.at
      const lastThrottled = seen.throttled.at(-1)!.at
      const before = between(firstThrottled - COMPARED_MS, firstThrottled) / (COMPARED_MS / 1000)
      const afterFrom = lastThrottled + RETRY_AFTER_S * 1000
      const after = between(afterFrom, afterFrom + COMPARED_MS) / (COMPARED_MS / 1000)
      const creates = seen.requests.filter((r) => r.method === "POST").length
      console.info(
        `${backend}: ${seen.requests.length} upstream requests (${creates} creates, ${
          seen.requests.length - creates
        } lists) in ${((Date.now() - started) / 1000).toFixed(1)} s; busiest second: ${busiestSecond.count} requests (${
          seen.requests.filter((r) =>
            r.method === "POST" && r.at >= busiestSecond.from && r.at < busiestSecond.from + 1000
          ).length
        } creates) at ${((busiestSecond.from - started) / 1000).toFixed(1)} s; ` +
          `${before.toFixed(1)}/s in the ${COMPARED_MS / 1000} s before the burst, ${after.toFixed(1)}/s in the ${
            COMPARED_MS / 1000
          } s after its Retry-After; rate gauge after the burst: ${lowered.toFixed(2)}/s`
      )
      expect(busiestSecond.count).toBeLessThanOrEqual(MOST_IN_A_SECOND)
      // The burst lowered the rate the upstream sees, for every replica.
      expect(after).toBeLessThan(before * 0.8)

      // Each task went upstream exactly once (the 429s created nothing), and ended as its upstream said.
      const upstreamTasks = seen.tasks.map((t) => numberOf(t.prompt))
      expect(upstreamTasks.length).toBe(TASKS)
      expect(new Set(upstreamTasks).size).toBe(TASKS)
      const ended = new Map<number, { status: string; code: string | undefined }>()
      let cursor: string | undefined
      do {
        const page = await tasks.listVideos({ limit: 100, ...(cursor === undefined ? {} : { after: cursor }) })
        for (const task of page.data) ended.set(ids.get(task.id)!, { status: task.status, code: task.error?.code })
        cursor = page.has_more ? page.last_id ?? undefined : undefined
      } while (cursor !== undefined)
      expect(ended.size).toBe(TASKS)
      for (const [n, { code, status }] of ended) {
        expect({ n, status, code }).toEqual(
          failsUpstream(n)
            ? { n, status: "failed", code: "video_task_failed" }
            : { n, status: "succeeded", code: undefined }
        )
      }

      // The replicas' own figures: the budget as configured, and polls a task apart measured on the poll gap histogram.
      for (const target of workers) {
        const samples = await scrapeOf(target)
        expect(valueOf(samples, "mtg_upstream_budget_requests_per_second", { channel: CHANNEL })).toBe(BUDGET)
        expect(valueOf(samples, "mtg_upstream_poll_gap_seconds_count", { channel: CHANNEL })).toBeGreaterThan(0)
      }
    },
    DEADLINE_MS * 2
  )
})
