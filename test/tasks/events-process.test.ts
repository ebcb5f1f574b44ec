import { afterEach, describe, expect, it } from "vitest"
import { createAccount } from "../support/adminApi.ts"
import { configWith } from "../support/config.ts"
import { backend } from "../support/database.ts"
import { type Installation, installation } from "../support/installation.ts"
import { type Service, stop } from "../support/process.ts"
import { openEvents } from "../support/sse.ts"
import { createVideoTask } from "../support/taskRuns.ts"
import { videoRequest } from "../support/tasks.ts"

/**
 * Live status streams with real processes: a stream served by an API process
 * sees a task that a worker process finishes (the change travels through the
 * database's notifications), and SIGTERM ends open streams cleanly.
 */

let site: Installation | undefined
const shown: Array<[string, Service]> = []
afterEach(async (context) => {
  if (context.task.result?.state === "fail") {
    for (const [role, service] of shown) console.error(`--- ${role} ---\n${service.output().slice(-3000)}`)
  }
  shown.splice(0)
  await site?.close()
  site = undefined
})

const config = () =>
  configWith("limits.json", (limits) => {
    for (const rate of Object.values(limits.rate_limits) as Array<any>) rate.per_second = rate.burst = 100_000
  })

describe(`live status stream, processes (${backend})`, { timeout: 120_000 }, () => {
  if (backend === "postgresql") {
    it("a stream on an API process sees the task a worker process finishes", async () => {
      site = await installation((service, role) => shown.push([role, service]))
      const dir = config()
      await site.serve("api", dir)
      const acct = await createAccount(site.target, { name: "watch", wallet_credits: 100 })
      const id = await createVideoTask(
        site.target,
        acct.model.key,
        videoRequest({ provider_options: { sandbox: { delay_ms: 1500 } } })
      )
      const stream = await openEvents(site.target, `/v1/video/tasks/${id}/events`, acct.resource.key)
      expect(stream.status).toBe(200)
      expect((await stream.next())?.data.status).toBe("queued")
      await site.worker(dir)
      const rest = await stream.rest()
      expect(rest.map((e) => e.data.status)).toContain("in_progress")
      expect(rest.at(-1)?.data).toMatchObject({ id, status: "succeeded", progress: 100 })
      expect(rest.at(-1)?.data.result).not.toBeNull()
    })
  }

  it("SIGTERM ends open streams cleanly and the process exits", async () => {
    site = await installation((service, role) => shown.push([role, service]))
    const api = await site.serve("api", config())
    const acct = await createAccount(site.target, { name: "term", wallet_credits: 100 })
    const ids = await Promise.all([1, 2, 3].map(() => createVideoTask(site!.target, acct.model.key, videoRequest())))
    const streams = await Promise.all(
      ids.map((id) => openEvents(site!.target, `/v1/video/tasks/${id}/events`, acct.resource.key))
    )
    for (const s of streams) expect((await s.next())?.data.status).toBe("queued")
    const exit = stop(api)
    // Each stream ends as a stream ends (its last chunk), not cut: reading to the end does not throw.
    const ends = await Promise.all(streams.map((s) => s.rest()))
    expect(ends).toEqual([[], [], []])
    await exit
    expect(await api.exited).toBe(0)
  })
})
