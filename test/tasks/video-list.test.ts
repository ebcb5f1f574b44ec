import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { VideoListParams } from "../../src/client/Tasks.ts"
import type { VideoTask } from "../../src/tasks/Task.ts"
import { createAccount } from "../support/adminApi.ts"
import { api } from "../support/api.ts"
import { unthrottled } from "../support/config.ts"
import { backend } from "../support/database.ts"
import { startGateway, type TestGateway } from "../support/gateway.ts"
import { expectError, raw } from "../support/http.ts"

let gw: TestGateway
let acct: Awaited<ReturnType<typeof createAccount>>
/** Every task created, as the list should show them: newest first. */
let all: Array<{ id: string; created_at: number; status: string; client_reference_id: string }>
/** The most tasks created within one second of `created_at`, before the test spreads them. */
let sameSecondMost = 0

const STATUSES = ["queued", "in_progress", "succeeded", "failed"] as const
const T0 = 1_800_000_000

beforeAll(async () => {
  gw = await startGateway({ CONFIG_DIR: unthrottled() })
  acct = await createAccount(gw, { name: "lister", wallet_credits: 10_000 })
  const other = await createAccount(gw, { name: "noise", wallet_credits: 100 })
  const ids: Array<string> = []
  const tasks = api(gw, acct)
  for (let i = 0; i < 250; i++) {
    const task = await tasks.createVideo({
      model: "provx-famK-3.0-720p",
      operation: "generation",
      input: { prompt: `scene ${i}` },
      output: { duration: 3 },
      client_reference_id: `ref-${i % 10}`
    })
    ids.push(task.id)
  }
  // Another account's tasks must never show up.
  for (let i = 0; i < 5; i++) {
    await api(gw, other).createVideo({
      model: "provx-famK-3.0-720p",
      operation: "generation",
      input: { prompt: "x" },
      output: { duration: 3 },
      client_reference_id: "ref-0"
    })
  }
  // Created as fast as one client can: many tasks share a second of `created_at`.
  const seconds = await gw.runtime.runPromise(
    Effect.flatMap(
      SqlClient.SqlClient,
      (sql) =>
        sql<{ n: number }>`SELECT count(*)::int AS n FROM tasks WHERE account_id = ${acct.id} GROUP BY created_at`
    )
  )
  sameSecondMost = Math.max(...seconds.map((r) => r.n))
  // Spread creation times (three tasks per second, ties kept) and statuses for the filters.
  await gw.runtime.runPromise(
    Effect.flatMap(
      SqlClient.SqlClient,
      (sql) =>
        Effect.forEach(
          ids,
          (id, i) =>
            sql`UPDATE tasks SET created_at = ${T0 + Math.floor(i / 3)}, status = ${STATUSES[i % 4]} WHERE id = ${id}`,
          {
            discard: true
          }
        )
    )
  )
  // Newest first is exactly the reverse of the order of creation, whatever the ids and seconds.
  all = ids.map((id, i) => ({
    id,
    created_at: T0 + Math.floor(i / 3),
    status: STATUSES[i % 4]!,
    client_reference_id: `ref-${i % 10}`
  }))
    .reverse()
})
afterAll(() => gw?.close())

/** Follows `after` = `last_id` until `has_more` is false. */
const walk = async (query: VideoListParams, limit?: number) => {
  const seen: Array<VideoTask> = []
  let after: string | null = null
  for (let page = 0; page < 300; page++) {
    const reply = await api(gw, acct).listVideos({
      ...query,
      ...(limit === undefined ? {} : { limit }),
      ...(after ? { after } : {})
    })
    expect(reply.object).toBe("list")
    expect(reply.data.length).toBeLessThanOrEqual(limit ?? 20)
    expect(reply.first_id).toBe(reply.data[0]?.id ?? null)
    expect(reply.last_id).toBe(reply.data.at(-1)?.id ?? null)
    seen.push(...reply.data)
    if (!reply.has_more) return seen
    after = reply.last_id
  }
  throw new Error("pagination did not end")
}

describe(`listing video tasks (${backend})`, () => {
  it("pages through 250 tasks newest first, each exactly once (default limit 20)", async () => {
    expect(sameSecondMost).toBeGreaterThan(1)
    const seen = await walk({})
    expect(seen.map((t) => t.id)).toEqual(all.map((t) => t.id))
    expect(seen[0]!.object).toBe("video.task")
  })

  it("limit 1 and 100 page the same sequence", async () => {
    expect((await walk({}, 100)).map((t) => t.id)).toEqual(all.map((t) => t.id))
    const first = await api(gw, acct).listVideos({ limit: 1 })
    expect(first.data.map((t) => t.id)).toEqual([all[0]!.id])
    expect(first.has_more).toBe(true)
  })

  it.each(STATUSES)("filters by status=%s", async (status) => {
    const seen = await walk({ status }, 25)
    expect(seen.map((t) => t.id)).toEqual(all.filter((t) => t.status === status).map((t) => t.id))
  })

  it("filters by operation, client_reference_id and the creation window", async () => {
    expect((await walk({ operation: "generation" }, 100)).length).toBe(250)
    const ref = await walk({ client_reference_id: "ref-3" }, 7)
    expect(ref.map((t) => t.id)).toEqual(all.filter((t) => t.client_reference_id === "ref-3").map((t) => t.id))
    const lo = T0 + 10
    const hi = T0 + 20
    const window = await walk({ created_after: lo, created_before: hi }, 9)
    expect(window.map((t) => t.id)).toEqual(
      all.filter((t) => t.created_at >= lo && t.created_at <= hi).map((t) => t.id)
    )
    const combined = await walk({ status: "failed", created_after: lo, client_reference_id: "ref-7" }, 3)
    expect(combined.map((t) => t.id)).toEqual(
      all.filter((t) => t.status === "failed" && t.created_at >= lo && t.client_reference_id === "ref-7").map((t) =>
        t.id
      )
    )
    expect(await walk({ client_reference_id: "nothing" })).toEqual([])
  })

  it("refuses bad parameters with 400 invalid_request", async () => {
    for (
      const query of [
        "limit=0",
        "limit=101",
        "limit=abc",
        "limit=2.5",
        "status=done",
        "operation=edit",
        "created_after=-1",
        "created_before=soon",
        "after=task_unknown",
        "colour=red",
        "limit=5&limit=6"
      ]
    ) {
      expectError(await raw(gw, "GET", `/v1/video/tasks?${query}`, { key: acct.resource.key }), 400, "invalid_request")
    }
  })
})
