import { request } from "node:http"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createAccount } from "../support/adminApi.ts"
import { api } from "../support/api.ts"
import { unthrottled } from "../support/config.ts"
import { backend } from "../support/database.ts"
import { startGateway, type TestGateway } from "../support/gateway.ts"
import { errorOf, expectError, raw } from "../support/http.ts"
import { taskApi } from "../support/taskApi.ts"
import { ledgerOf, query, videoRequest } from "../support/tasks.ts"

/** The `Cancel-After` header of both creates: what it takes, what it refuses, what it stores. */

let gw: TestGateway
let acct: Awaited<ReturnType<typeof createAccount>>
beforeAll(async () => {
  gw = await startGateway({ CONFIG_DIR: unthrottled() })
  acct = await createAccount(gw, { name: "deadlines", wallet_credits: 1000 })
})
afterAll(() => gw?.close())

const imageRequest = { model: "provx-image-1", operation: "generation", input: { prompt: "a kite" } } as const

const createVideo = (cancelAfter: string, idempotencyKey?: string) =>
  taskApi(gw, acct).createVideoWith(videoRequest(), { cancelAfter, idempotencyKey })

const createImage = (cancelAfter: string) => taskApi(gw, acct).createImageWith(imageRequest, { cancelAfter })

// A header the gateway must refuse, sent as it is.
const rawVideo = (cancelAfter: string) =>
  raw(gw, "POST", "/v1/video/tasks", {
    key: acct.model.key,
    json: videoRequest(),
    headers: { "cancel-after": cancelAfter }
  })

const rawImage = (cancelAfter: string) =>
  raw(gw, "POST", "/v1/image/tasks", {
    key: acct.model.key,
    json: imageRequest,
    headers: { "cancel-after": cancelAfter }
  })

const deadlineOf = async (id: string) => {
  const [row] = await query<{ cancel_at: number | null; created_at: number }>(
    gw,
    (sql) => sql`SELECT cancel_at, created_at FROM tasks WHERE id = ${id}`
  )
  // The deadline counts from the create's millisecond; created_at is its whole second.
  return row!.cancel_at === null
    ? null
    : Math.floor((Number(row!.cancel_at) - Number(row!.created_at) * 1000) / 1000) * 1000
}

describe(`Cancel-After (${backend})`, () => {
  it("takes 45s, 10m, 2h, plain seconds, and the bounds 10 s and 48 h; stores the deadline with the task", async () => {
    const cases: Array<[string, number]> = [
      ["45s", 45],
      ["10m", 600],
      ["2h", 7200],
      ["90", 90],
      ["10", 10],
      ["10s", 10],
      ["48h", 172_800],
      ["2880m", 172_800],
      ["172800", 172_800]
    ]
    for (const [header, seconds] of cases) {
      const reply = await createVideo(header)
      expect(reply.status, header).toBe(202)
      expect(await deadlineOf(reply.task.id), header).toBe(seconds * 1000)
    }
    const image = await createImage("1h")
    expect(image.status).toBe(202)
    expect(await deadlineOf(image.task.id)).toBe(3_600_000)
    const none = await api(gw, acct).createVideo(videoRequest())
    expect(await deadlineOf(none.id)).toBeNull()
  })

  it("refuses malformed, negative, zero, too short and over 48 h with 400 invalid_request, creating and charging nothing", async () => {
    const [{ n: before }] = await query<{ n: number }>(gw, (sql) => sql`SELECT count(*)::int AS n FROM tasks`) as any
    const refused = [
      "abc",
      "",
      " ",
      "10 s",
      "1.5m",
      "10d",
      "1e3",
      "s",
      "10S",
      "0x20",
      "+30s",
      "-10s",
      "-1",
      "0",
      "0s",
      "0h",
      "9s",
      "9",
      "49h",
      "2881m",
      "172801",
      "999999999h",
      "10s, 20s",
      "10s;20s"
    ]
    for (const header of refused) {
      const reply = await rawVideo(header)
      expectError(reply, 400, "invalid_request")
      expect(errorOf(reply.body)?.message, header).toMatch(/Cancel-After/)
      expectError(await rawImage(header), 400, "invalid_request")
    }
    const [{ n: after }] = await query<{ n: number }>(gw, (sql) => sql`SELECT count(*)::int AS n FROM tasks`) as any
    expect(after).toBe(before)
  })

  it("refuses the header sent twice (400), even with two valid values", async () => {
    const reply = await new Promise<{ status: number; body: unknown }>((resolve, reject) => {
      const body = JSON.stringify(videoRequest())
      const req = request(`${gw.url}/v1/video/tasks`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${acct.model.key}`,
          "content-type": "application/json",
          "cancel-after": ["30s", "60s"]
        }
      }, (res) => {
        let text = ""
        res.on("data", (c) => (text += c))
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) as unknown }))
      })
      req.on("error", reject)
      req.end(body)
    })
    expect(reply.status).toBe(400)
    expect(errorOf(reply.body)?.code).toBe("invalid_request")
    expect(errorOf(reply.body)?.message).toMatch(/Cancel-After/)
  })

  it("an idempotent replay returns the original task with its original deadline, charged once", async () => {
    const first = await createVideo("30m", "deadline-replay")
    const replay = await createVideo("30m", "deadline-replay")
    expect(replay.status).toBe(202)
    expect(replay.headers["idempotent-replayed"]).toBe("true")
    expect(replay.task).toEqual(first.task)
    // A replay with another deadline is still the original request: the body decides, and the deadline stays.
    const other = await createVideo("2h", "deadline-replay")
    expect(other.task.id).toBe(first.task.id)
    expect(await deadlineOf(first.task.id)).toBe(1_800_000)
    expect((await ledgerOf(gw, first.task.id)).map((l) => l.kind)).toEqual(["charge"])
  })
})
