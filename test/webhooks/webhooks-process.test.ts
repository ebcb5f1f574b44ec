import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import type { WebhookEventRecord } from "../../src/webhooks/EventRecord.ts"
import { createAccount, operator } from "../support/adminApi.ts"
import { configWith } from "../support/config.ts"
import { backend, createDatabase } from "../support/database.ts"
import { eventually, sleep } from "../support/eventually.ts"
import { ADMIN_TOKEN, freePort } from "../support/gateway.ts"
import type { Target } from "../support/http.ts"
import { replyOf } from "../support/opsApi.ts"
import { kill, type LogLine, type Service, start, stop, waitForHealth, waitForLog } from "../support/process.ts"
import { type Receiver, startReceiver, verifyStandardWebhook } from "../support/receiver.ts"

/**
 * Webhook delivery across real processes and real signals: a SIGKILL between
 * two attempts loses nothing of the schedule; a SIGKILL after the receiver's
 * 2xx but before the outcome is recorded leads to a redelivery with the same
 * event id (at least once, never lost); two replicas on one database never
 * send one attempt twice.
 *
 * The second story needs the process to die in a gap of a few milliseconds.
 * The service has a test hook for that, WEBHOOK_TEST_RECORD_DELAY_MS: a pause
 * between the receiver's answer and recording it (src/webhooks/WebhookDeliveries.ts).
 * It changes no decision the worker makes (the lease covers the pause, as it
 * covers a slow database); it only widens the window the kill must hit.
 */

const PG = backend === "postgresql"

/**
 * One installation: data directory, database (PostgreSQL: a fresh one), the
 * environment every process shares and a receiver. Each test has its own, so
 * the tests run concurrently; `close` kills whatever is still running.
 */
const installation = async (webhook: Record<string, string>, ...answer: Parameters<typeof startReceiver>) => {
  const running: Array<Service> = []
  const hook = await startReceiver(...answer)
  const dataDir = mkdtempSync(join(tmpdir(), "gw-webhooks-process-"))
  const db = await createDatabase()
  const config = configWith("limits.json", (limits) => {
    limits.engine = { poll_interval_ms: 200 }
    for (const rate of Object.values(limits.rate_limits) as Array<any>) rate.per_second = rate.burst = 100_000
  })
  const env = (port: number, extra: Record<string, string> = {}): Record<string, string> => ({
    ROLE: "all",
    DATA_DIR: dataDir,
    CONFIG_DIR: config,
    ADMIN_TOKEN,
    ENCRYPTION_KEY: "webhooks-process-test-encryption-key",
    STORAGE_SIGNING_KEY: "webhooks-process-test-storage-signing-key",
    PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
    ALLOW_PRIVATE_TARGETS: "true",
    ...webhook,
    ...(db.url ? { DATABASE_URL: db.url } : {}),
    ...extra
  })
  /** A ROLE=all process on `port`, once it answers. */
  const serve = async (port: number, extra: Record<string, string> = {}) => {
    // Nothing may answer on the port before this process does (a survivor of a kill would).
    expect(await fetch(`http://127.0.0.1:${port}/healthz`).then(() => "answered", () => "free")).toBe("free")
    // `node dist/src/main.js`: the service is the child itself, so SIGKILL reaches it (npm would survive as an orphan).
    const service = start(env(port, extra), port, "node")
    running.push(service)
    expect(await waitForHealth(service, 60_000), service.output()).toBe(true)
    return service
  }
  const close = async () => {
    await Promise.all(running.map(kill))
    await hook.close()
    await db.drop()
    rmSync(dataDir, { recursive: true, force: true })
  }
  return { hook, serve, close }
}

type EventRecord = typeof WebhookEventRecord.Type

const eventOf = async (target: Target, accountId: string, eventId: string) =>
  (await operator(target).webhookEvents(accountId, { limit: 100 })).data.find((e) => e.id === eventId)

const eventWhen = (
  target: Target,
  accountId: string,
  eventId: string,
  done: (e: EventRecord) => boolean,
  deadlineMs = 60_000
) =>
  eventually(
    async () => {
      const e = await eventOf(target, accountId, eventId)
      return e !== undefined && done(e) ? e : undefined
    },
    `event ${eventId} in the awaited state`,
    { deadlineMs }
  )

const attemptLogs = (service: Service): Array<LogLine> => service.logs().filter((l) => l.message === "webhook attempt")

/** An account whose webhook points at the receiver, and one webhook.test event for it. */
const testEvent = async (target: Target, hook: Receiver) => {
  const acct = await createAccount(target, { name: "hooks" })
  const path = { id: acct.id }
  const set = await replyOf(
    operator(target).call((c) => c.adminWebhooks.setWebhook({ path, payload: { url: hook.url }, withResponse: true }))
  )
  expect(set.status).toBe(200)
  const sent = await replyOf(operator(target).call((c) => c.adminWebhooks.testWebhook({ path, withResponse: true })))
  expect(sent.status).toBe(202)
  return { accountId: acct.id, key: set.body.key, eventId: sent.body.event_id }
}

describe.concurrent(`webhook delivery across crashes and replicas (${backend})`, { timeout: 120_000 }, () => {
  it("SIGKILL between two attempts: the restarted service finishes the schedule (500, 500, 200), one event id", async () => {
    const INTERVAL_S = 2
    const site = await installation(
      { WEBHOOK_MAX_ATTEMPTS: "3", WEBHOOK_RETRY_INTERVAL_S: String(INTERVAL_S), WEBHOOK_TIMEOUT_S: "5" },
      (_, i) => (i < 2 ? 500 : 200)
    )
    const hook = site.hook
    try {
      const port = await freePort()
      const target = { url: `http://127.0.0.1:${port}` }
      const first = await site.serve(port)
      const { accountId, eventId, key } = await testEvent(target, hook)

      await hook.waitFor(1)
      // Attempt 1 is recorded and attempt 2 scheduled, in the database only: now the process dies.
      await eventWhen(target, accountId, eventId, (e) => e.status === "pending" && e.attempts[0]?.outcome === "failed")
      await kill(first)
      expect(first.child.signalCode).toBe("SIGKILL")
      expect(hook.receipts).toHaveLength(1)

      const second = await site.serve(port)
      const receipts = await hook.waitFor(3, 60_000)
      for (const r of receipts) {
        expect(r.headers["webhook-id"]).toBe(eventId)
        expect(r.headers.authorization).toBe(`Bearer ${key}`)
        verifyStandardWebhook(r, key)
      }
      expect(new Set(receipts.map((r) => r.body)).size).toBe(1)
      // The schedule held across the restart: attempt 2 no earlier than one interval after attempt 1.
      expect(receipts[1]!.at - receipts[0]!.at).toBeGreaterThanOrEqual(INTERVAL_S * 1000 - 20)
      expect(receipts[2]!.at - receipts[1]!.at).toBeGreaterThanOrEqual(INTERVAL_S * 1000 - 20)

      const e = await eventWhen(target, accountId, eventId, (x) => x.status === "delivered")
      expect(e.attempts.map((a) => [a.attempt, a.outcome, a.status_code])).toEqual([
        [1, "failed", 500],
        [2, "failed", 500],
        [3, "delivered", 200]
      ])
      // Attempts 2 and 3 were the new process's (its log line for attempt 3 may still be on its way through the pipe).
      await waitForLog(
        second,
        (l) => l.message === "webhook attempt" && l.annotations.event_id === eventId && l.annotations.attempt === 3,
        10_000
      )
      expect(attemptLogs(second).filter((l) => l.annotations.event_id === eventId).map((l) => l.annotations.attempt))
        .toEqual([2, 3])
      // The sleep is the scenario: a whole retry interval after the delivery in which no fourth call may come.
      await sleep(INTERVAL_S * 1000 + 500)
      expect(hook.receipts).toHaveLength(3)
      await stop(second)
    } finally {
      await site.close()
    }
  })

  it("SIGKILL after the receiver's 2xx, before the outcome is recorded: redelivered with the same event id and body", async () => {
    const RECORD_DELAY_MS = 5_000
    const site = await installation({
      WEBHOOK_MAX_ATTEMPTS: "3",
      WEBHOOK_RETRY_INTERVAL_S: "1",
      // Generous: the restarted process's first delivery is its first outgoing request, slow on a loaded machine.
      WEBHOOK_TIMEOUT_S: "5"
    }, () => 200)
    const hook = site.hook
    try {
      const port = await freePort()
      const target = { url: `http://127.0.0.1:${port}` }
      const first = await site.serve(port, { WEBHOOK_TEST_RECORD_DELAY_MS: String(RECORD_DELAY_MS) })
      const { accountId, eventId, key } = await testEvent(target, hook)

      await hook.waitFor(1)
      // The receiver has answered 200; the attempt is still unrecorded ("sending") when the process dies.
      const before = await eventOf(target, accountId, eventId)
      expect(before?.status).toBe("pending")
      expect(before?.attempts.map((a) => [a.attempt, a.outcome])).toEqual([[1, "sending"]])
      await kill(first)
      expect(attemptLogs(first)).toEqual([])

      // Restarted without the hook: once the dead attempt's lease ends, the event goes again.
      const second = await site.serve(port)
      const receipts = await hook.waitFor(2, 60_000)
      expect(receipts.map((r) => r.headers["webhook-id"])).toEqual([eventId, eventId])
      expect(receipts[1]!.body).toBe(receipts[0]!.body)
      verifyStandardWebhook(receipts[1]!, key)

      const e = await eventWhen(target, accountId, eventId, (x) => x.status === "delivered")
      expect(e.attempts.map((a) => [a.attempt, a.outcome, a.status_code])).toEqual([
        [1, "interrupted", null],
        [2, "delivered", 200]
      ])
      expect(second.logs().some((l) => l.message === "webhook attempt interrupted; redelivering")).toBe(true)
      // The sleep is the scenario: a while after the delivery in which no third call may come.
      await sleep(1_500)
      expect(hook.receipts).toHaveLength(2)
      await stop(second)
    } finally {
      await site.close()
    }
  })

  // Replicas exist only on PostgreSQL: PGlite is an embedded, single-process
  // database under one DATA_DIR, which a second process cannot open.
  it.skipIf(!PG)(
    "two replicas share 40 events, each failing once then delivered: every attempt is sent exactly once",
    async () => {
      const EVENTS = 40
      // Each event id: 500 the first time, 200 after; slow enough that the replicas' attempts overlap.
      const seen = new Map<string, number>()
      const site = await installation({
        WEBHOOK_MAX_ATTEMPTS: "3",
        WEBHOOK_RETRY_INTERVAL_S: "1",
        WEBHOOK_TIMEOUT_S: "5"
      }, async (r) => {
        const id = String(r.headers["webhook-id"])
        seen.set(id, (seen.get(id) ?? 0) + 1)
        await sleep(150)
        return seen.get(id) === 1 ? 500 : 200
      })
      const hook = site.hook
      try {
        const ports = [await freePort(), await freePort()]
        const targets = ports.map((port) => ({ url: `http://127.0.0.1:${port}` }))
        const replicas = await Promise.all(ports.map((port) => site.serve(port)))
        const acct = await createAccount(targets[0]!, { name: "replicas" })
        const path = { id: acct.id }
        const set = await replyOf(
          operator(targets[0]!).call((c) =>
            c.adminWebhooks.setWebhook({ path, payload: { url: hook.url }, withResponse: true })
          )
        )
        expect(set.status).toBe(200)
        const ids = await Promise.all(Array.from({ length: EVENTS }, async (_, i) => {
          const reply = await replyOf(
            operator(targets[i % 2]!).call((c) => c.adminWebhooks.testWebhook({ path, withResponse: true }))
          )
          expect(reply.status).toBe(202)
          return reply.body.event_id
        }))

        await hook.waitFor(2 * EVENTS, 60_000)
        const delivered = await eventually(
          async () => {
            const reply = await operator(targets[1]!).webhookEvents(acct.id, { limit: 100, status: "delivered" })
            return reply.data.length === EVENTS ? reply.data : undefined
          },
          "every event delivered",
          { deadlineMs: 30_000 }
        )
        // The sleep is the scenario: a while after the last delivery in which no replica may send anything more.
        await sleep(1_500)

        // The receiver's view: each event exactly twice (the 500, then the 200), nothing else.
        expect(hook.receipts).toHaveLength(2 * EVENTS)
        expect(new Map([...seen].sort())).toEqual(new Map(ids.map((id) => [id, 2] as const).sort()))
        // The database's view: attempts 1 (failed) and 2 (delivered) for each, no interrupted ones.
        for (const e of delivered) {
          expect(e.attempts.map((a) => [a.attempt, a.outcome, a.status_code]), e.id).toEqual([[1, "failed", 500], [
            2,
            "delivered",
            200
          ]])
        }
        // The processes' view: every (event, attempt) sent by exactly one of them, and both took part.
        const lines = replicas.map(attemptLogs)
        const sent = lines.flat().map((l) => `${l.annotations.event_id}#${l.annotations.attempt}`)
        expect(sent).toHaveLength(2 * EVENTS)
        expect(new Set(sent).size).toBe(2 * EVENTS)
        expect(lines.every((l) => l.length > 0), `attempts per replica: ${lines.map((l) => l.length)}`).toBe(true)
        await Promise.all(replicas.map(stop))
      } finally {
        await site.close()
      }
    }
  )
})
