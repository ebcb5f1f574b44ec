import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { connect, type Socket } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { StreamSlots } from "../../src/tasks/StreamSlots.ts"
import { TaskWatchers } from "../../src/tasks/TaskWatchers.ts"
import { createAccount } from "../support/adminApi.ts"
import { api } from "../support/api.ts"
import { configWith } from "../support/config.ts"
import { backend } from "../support/database.ts"
import { eventually } from "../support/eventually.ts"
import { startGateway, type TestGateway } from "../support/gateway.ts"
import { openEvents } from "../support/sse.ts"
import { videoRequest } from "../support/tasks.ts"

/**
 * A client that never reads, and a quiet stream's keep-alive. The API alone
 * (no engine): the tests move tasks with SQL, which the table's trigger
 * announces. Settings lowered through limits.json: a stall is dropped after
 * 2 s, a quiet stream gets a comment every second.
 */
let gw: TestGateway
beforeAll(async () => {
  const config = configWith("limits.json", (limits) => {
    limits.stream_stall_s = 2
    limits.stream_keep_alive_s = 1
  })
  gw = await startGateway({ CONFIG_DIR: config })
})
afterAll(() => gw?.close())

const update = (set: (sql: SqlClient.SqlClient) => Effect.Effect<unknown, unknown>) =>
  gw.runtime.runPromise(Effect.flatMap(SqlClient.SqlClient, set))

const leftBehind = () =>
  gw.runtime.runPromise(
    Effect.map(
      Effect.all([TaskWatchers, StreamSlots]),
      ([watchers, slots]) => ({ ...watchers.stats(), streams: slots.open() })
    )
  )

/** Every task object of this task carries ~256 KB of metadata, so a few events fill any socket buffer. */
const BIG = "x".repeat(256 * 1024)
const CHANGES = 99

describe(`live status stream: stalled client and keep-alive (${backend})`, () => {
  it("a client that never reads holds a bounded buffer, and is dropped; nothing is left behind", async () => {
    const acct = await createAccount(gw, { name: "stalled", wallet_credits: 100 })
    const created = await api(gw, acct).createVideoReply(videoRequest({ metadata: { big: BIG } }))
    expect(created.status).toBe(202)
    const id = created.task.id
    const before = await leftBehind()

    const url = new URL(gw.url)
    const socket: Socket = connect(Number(url.port), url.hostname)
    socket.pause() // never read: the kernel's buffers fill, then the server's writes must wait
    let received = 0
    let ended = false
    socket.on("close", () => (ended = true))
    await new Promise<void>((done) => socket.once("connect", () => done()))
    socket.write(
      `GET /v1/video/tasks/${id}/events HTTP/1.1\r\nhost: ${url.host}\r\n` +
        `authorization: Bearer ${acct.resource.key}\r\naccept: text/event-stream\r\n\r\n`
    )
    await eventually(async () => {
      const now = await leftBehind()
      return now.followers === before.followers + 1 ? now : undefined
    }, "the stream is open")

    // A reading stream of the same task paces the changes: each is seen (so each wakes the stalled stream's
    // watcher too) before the next, so they are not merged into a few and the server has ~25 MB to send.
    const pacer = await openEvents(gw, `/v1/video/tasks/${id}/events`, acct.resource.key)
    expect((await pacer.next())?.event).toBe("task")
    for (let percent = 1; percent <= CHANGES; percent++) {
      await update((sql) => sql`UPDATE tasks SET status = 'in_progress', progress = ${percent} WHERE id = ${id}`)
      expect((await pacer.next())?.data.progress).toBe(percent)
    }
    await update((sql) =>
      sql`UPDATE tasks SET status = 'failed', run_state = 'done', completed_at = 1700000000,
        error = ${JSON.stringify({ code: "generation_failed", message: "no", retryable: false })}::jsonb
        WHERE id = ${id}`
    )
    expect((await pacer.rest()).at(-1)?.data.status).toBe("failed")
    // The stalled stream is dropped: its watcher and slot go although the client never read a byte.
    await eventually(async () => {
      const now = await leftBehind()
      return now.watchers === before.watchers && now.followers === before.followers && now.streams === before.streams
        ? now
        : undefined
    }, "the stalled stream's watcher and slot released")

    // Now read what the server had written: the socket's buffers and at most the response's mark, not every change.
    socket.on("data", (chunk: Buffer) => (received += chunk.length))
    socket.resume()
    await eventually(async () => (ended ? true : undefined), "the server closed the connection")
    const produced = CHANGES * BIG.length
    console.log(`stalled client: ${CHANGES} changes of ${BIG.length} B; received ${received} B`)
    expect(received).toBeLessThan(produced / 4)
    socket.destroy()
  })

  it("a quiet stream gets a keep-alive comment", async () => {
    const acct = await createAccount(gw, { name: "quiet", wallet_credits: 100 })
    const created = await api(gw, acct).createVideo(videoRequest())
    const stream = await openEvents(gw, `/v1/video/tasks/${created.id}/events`, acct.resource.key)
    expect(stream.status).toBe(200)
    expect((await stream.next())?.event).toBe("task")
    const comment = await stream.next({ comments: true })
    expect(comment?.comment).toBe("keep-alive")
    stream.close()
  })
})
