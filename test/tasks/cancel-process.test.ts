import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createAccount } from "../support/adminApi.ts"
import { configWith } from "../support/config.ts"
import { backend, createDatabase } from "../support/database.ts"
import { eventually } from "../support/eventually.ts"
import { ADMIN_TOKEN, freePort } from "../support/gateway.ts"
import { type Target } from "../support/http.ts"
import { RUNTIME, type Service, start, stop, waitForHealth } from "../support/process.ts"
import { taskApi } from "../support/taskApi.ts"
import { videoRequest } from "../support/tasks.ts"

/**
 * Cancel and Cancel-After on one service process started the way the runtime
 * under test starts it (`RUNTIME=deno`: on Deno, `npm run test:deno`;
 * otherwise on Node): a rendering sandbox task cancelled, a queued one
 * cancelled, and a deadline ending a slow one, with the default engine
 * settings. The in-process suites prove the details.
 */

let service: Service
let target: Target
let dataDir: string
let configDir: string
let db: Awaited<ReturnType<typeof createDatabase>>
let acct: Awaited<ReturnType<typeof createAccount>>

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), "gw-cancel-process-"))
  db = await createDatabase()
  configDir = configWith("limits.json", (limits) => {
    for (const rate of Object.values(limits.rate_limits) as Array<any>) rate.per_second = rate.burst = 100_000
  })
  const port = await freePort()
  target = { url: `http://127.0.0.1:${port}` }
  service = start(
    {
      ROLE: "all",
      DATA_DIR: dataDir,
      CONFIG_DIR: configDir,
      ADMIN_TOKEN,
      PUBLIC_BASE_URL: target.url,
      ...(db.url ? { DATABASE_URL: db.url } : {})
    },
    port
  )
  expect(await waitForHealth(service, 90_000), service.output()).toBe(true)
  acct = await createAccount(target, { name: "cancel-runtime", wallet_credits: 1000 })
}, 120_000)

afterAll(async () => {
  if (service !== undefined) {
    await stop(service)
    expect(await service.exited).toBe(0)
  }
  await db?.drop()
  rmSync(dataDir, { recursive: true, force: true })
  rmSync(configDir, { recursive: true, force: true })
})

const slow = videoRequest({ provider_options: { sandbox: { delay_ms: 60_000 } } })
const create = async (cancelAfter?: string) => {
  const reply = await taskApi(target, acct).createVideoWith(slow, { cancelAfter })
  expect(reply.status).toBe(202)
  return reply.task.id
}
const read = (id: string) => taskApi(target, acct).getVideo(id)

describe(`cancel on ${RUNTIME} (${backend})`, () => {
  it("cancels a rendering task and a queued one behind it; the slots are free again", async () => {
    const running = [await create(), await create()]
    for (const id of running) {
      await eventually(async () => (await read(id)).status === "in_progress" || undefined, "rendering", {
        deadlineMs: 60_000
      })
    }
    const queued = await create()
    expect((await read(queued)).status).toBe("queued")
    for (const id of [queued, ...running]) {
      // A 200: the typed client decodes the contract's answer or fails (with the error body).
      const reply = await taskApi(target, acct).cancelVideo(id)
      expect(reply.error?.code).toBe("task_cancelled")
    }
    const next = await taskApi(target, acct).createVideo(
      videoRequest({ provider_options: { sandbox: { delay_ms: 10 } } })
    )
    await eventually(async () => (await read(next.id)).status === "succeeded" || undefined, "next task", {
      deadlineMs: 90_000
    })
  }, 180_000)

  it("Cancel-After: 10s ends a 60 s task with task_deadline_exceeded", async () => {
    const id = await create("10s")
    const task = await eventually(
      async () => {
        const t = await read(id)
        return t.status === "failed" ? t : undefined
      },
      "the deadline",
      { deadlineMs: 60_000 }
    )
    expect(task.error).toMatchObject({ code: "task_deadline_exceeded", retryable: true })
    expect((task.completed_at ?? Infinity) - task.created_at).toBeLessThanOrEqual(15)
  }, 90_000)
})
