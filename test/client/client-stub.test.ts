// Runs once: no database (left out of the PostgreSQL pass, vitest.config.ts).
import { type HttpApi, HttpClient, HttpClientResponse, OpenApi } from "@effect/platform"
import { NodeFileSystem, NodePath } from "@effect/platform-node"
import { expect, it } from "@effect/vitest"
import { Chunk, Effect, Fiber, Layer, Option, Stream, TestClock } from "effect"
import { mkdtempSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { beforeAll, describe } from "vitest"
import { GatewayApi } from "../../src/Api.ts"
import { GatewayClient, GatewayError, uploadFiles, waitForTask } from "../../src/client/index.ts"
import { GatewayClientApi } from "../../src/ClientApi.ts"
import { MediaUploadList } from "../../src/uploads/Upload.ts"
import { makeImage } from "../support/uploads.ts"

/**
 * The client's waiting and uploading against a stub HTTP client, with the
 * test clock: which request is made when, and what the client does with
 * answers a running gateway does not give on demand (a 429 mid-wait, a
 * refused confirmation).
 */

interface Seen {
  readonly method: string
  readonly url: string
  readonly headers: Record<string, string>
  readonly bytes: number
}

type Answer = { readonly status?: number; readonly body: unknown; readonly headers?: Record<string, string> }

const stub = (answer: (seen: Seen, count: number) => Answer, log: Array<Seen>) =>
  HttpClient.make((request, url) =>
    Effect.gen(function*() {
      const bytes = request.body._tag === "Stream"
        ? yield* Stream.runFold(request.body.stream, 0, (n, chunk) => n + chunk.byteLength).pipe(Effect.orDie)
        : request.body._tag === "Uint8Array"
        ? request.body.body.byteLength
        : 0
      const seen = { method: request.method, url: url.toString(), headers: { ...request.headers }, bytes }
      log.push(seen)
      const { status = 200, body, headers = {} } = answer(seen, log.length)
      return HttpClientResponse.fromWeb(
        request,
        new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json", ...headers } })
      )
    })
  )

const withStub = (answer: (seen: Seen, count: number) => Answer, log: Array<Seen>) =>
  GatewayClient.layer({ baseUrl: "http://gw.test", modelToken: "sk-test", resourceKey: "ak_test" }).pipe(
    Layer.provide(Layer.succeed(HttpClient.HttpClient, stub(answer, log))),
    Layer.provideMerge(Layer.merge(NodeFileSystem.layer, NodePath.layer))
  )

const task = (status: string, progress: number) => ({
  id: "task_stub",
  object: "video.task",
  model: "provy-famS-2.0-480p",
  operation: "generation",
  status,
  progress,
  result: status === "succeeded" ? { videos: [] } : null,
  error: null,
  metadata: {},
  created_at: 1,
  started_at: 1,
  completed_at: status === "succeeded" ? 2 : null,
  updated_at: 2
})

const errorBody = (code: string, type = "invalid_request_error") => ({
  error: { type, code, message: `stub says ${code}`, request_id: "req_stub" }
})

/** Lets the forked wait run until it sleeps on the test clock. */
const untilSleeping = Effect.gen(function*() {
  while (Chunk.isEmpty(yield* TestClock.sleeps())) yield* Effect.yieldNow()
})

describe("the client's wait, against a stub", () => {
  it.effect("honours Retry-After: no second look before the interval an answer names", () =>
    Effect.gen(function*() {
      const log: Array<Seen> = []
      const answers = [
        { body: task("in_progress", 40), headers: { "retry-after": "7" } },
        { body: task("succeeded", 100) }
      ]
      const fiber = yield* Effect.fork(
        waitForTask("video", "task_stub", { interval: 1 }).pipe(
          Effect.provide(withStub((_, n) => answers[n - 1]!, log))
        )
      )
      yield* untilSleeping
      expect(log.map((s) => s.url)).toEqual(["http://gw.test/v1/video/tasks/task_stub"])
      expect(log[0]!.headers.authorization).toBe("Bearer ak_test")
      yield* TestClock.adjust("6 seconds")
      expect(log).toHaveLength(1)
      yield* TestClock.adjust("1 second")
      const done = yield* Fiber.join(fiber)
      expect(done.status).toBe("succeeded")
      expect(log).toHaveLength(2)
    }))

  it.effect(
    "waits the create answer's Retry-After before the first look, a 503's as long as it says, and the create answer's again after an answer that names none",
    () =>
      Effect.gen(function*() {
        const log: Array<Seen> = []
        const answers: Array<Answer> = [
          { status: 503, body: errorBody("service_unavailable", "api_error"), headers: { "retry-after": "4" } },
          { body: task("in_progress", 50) },
          { body: task("succeeded", 100) }
        ]
        const fiber = yield* Effect.fork(
          waitForTask("video", "task_stub", { retryAfter: 2, interval: 30 }).pipe(
            Effect.provide(withStub((_, n) => answers[n - 1]!, log))
          )
        )
        // [seconds to move the clock, looks made by then]
        const steps: Array<readonly [number, number]> = [[1, 0], [1, 1], [3, 1], [1, 2], [1, 2], [1, 3]]
        for (const [seconds, looks] of steps) {
          yield* untilSleeping
          yield* TestClock.adjust(`${seconds} seconds`)
          expect(log).toHaveLength(looks)
        }
        expect((yield* Fiber.join(fiber)).status).toBe("succeeded")
      })
  )

  it.effect("rides out a 429 for as long as its Retry-After says, and fails at once on a 404", () =>
    Effect.gen(function*() {
      const log: Array<Seen> = []
      const answers: Array<Answer> = [
        { status: 429, body: errorBody("rate_limit_exceeded", "rate_limit_error"), headers: { "retry-after": "3" } },
        { body: task("succeeded", 100) }
      ]
      const fiber = yield* Effect.fork(
        waitForTask("video", "task_stub", { interval: 30 }).pipe(
          Effect.provide(withStub((_, n) => answers[n - 1]!, log))
        )
      )
      yield* untilSleeping
      yield* TestClock.adjust("2 seconds")
      expect(log).toHaveLength(1)
      yield* TestClock.adjust("1 second")
      expect((yield* Fiber.join(fiber)).status).toBe("succeeded")

      const missing = yield* Effect.flip(
        waitForTask("video", "task_gone").pipe(
          Effect.provide(withStub(() => ({ status: 404, body: errorBody("task_not_found", "not_found_error") }), [])),
          Effect.timeout("1 second")
        )
      )
      expect(missing).toBeInstanceOf(GatewayError)
      expect(missing).toMatchObject({ status: 404, code: "task_not_found", request_id: "req_stub" })
    }))
})

describe("the client's upload, against a stub", () => {
  let png: string
  beforeAll(async () => {
    png = join(mkdtempSync(join(tmpdir(), "gw-client-stub-")), "still.png")
    writeFileSync(png, await makeImage("png"))
  })

  const session = {
    id: "upl_1",
    client_id: "0",
    kind: "image",
    method: "PUT",
    upload_url: "http://storage.test/put/upl_1?X-Expires=9&X-Signature=abc",
    headers: { "Content-Type": "image/png", "x-amz-meta-owner": "acct_1" },
    expires_at: 9
  }
  const confirmed = {
    id: "upl_1",
    client_id: "0",
    kind: "image",
    url: "http://storage.test/get/upl_1?sig=x",
    mime_type: "image/png",
    size_bytes: 0,
    temporary: true,
    expires_at: 9
  }

  const flow = (complete: Answer) => (seen: Seen): Answer =>
    seen.url.endsWith("/v1/media/uploads")
      ? { body: { object: "media.upload.session.list", data: [session] } }
      : seen.method === "PUT"
      ? { body: {} }
      : complete

  it.effect("PUTs with exactly the session's method and headers, and returns the confirmed upload", () =>
    Effect.gen(function*() {
      const log: Array<Seen> = []
      const size = statSync(png).size
      const [uploaded] = yield* uploadFiles([png]).pipe(
        Effect.provide(
          withStub(
            flow({ body: { object: "media.upload.list", data: [{ ...confirmed, size_bytes: size }], errors: [] } }),
            log
          )
        )
      )
      expect(uploaded!.url).toBe(confirmed.url)
      expect(uploaded!.file.kind).toBe("image")
      const put = log.find((s) => s.method === "PUT")!
      expect(put.url).toBe(session.upload_url)
      expect(put.headers).toMatchObject({
        "content-type": "image/png",
        "x-amz-meta-owner": "acct_1",
        "content-length": String(size)
      })
      expect(put.headers.authorization).toBeUndefined()
      expect(put.bytes).toBe(size)
      expect(log.map((s) => s.url.replace("http://gw.test", ""))).toEqual([
        "/v1/media/uploads",
        session.upload_url,
        "/v1/media/uploads/complete"
      ])
    }))

  it.effect("a refused confirmation fails with its code, as an error answer and as a 200 leaving the id out", () =>
    Effect.gen(function*() {
      const refused = yield* Effect.flip(
        uploadFiles([png]).pipe(
          Effect.provide(withStub(flow({ status: 409, body: errorBody("upload_not_received", "conflict_error") }), []))
        )
      )
      expect(refused).toMatchObject({
        _tag: "GatewayError",
        status: 409,
        code: "upload_not_received",
        request_id: "req_stub"
      })

      const partial = yield* Effect.flip(
        uploadFiles([png]).pipe(Effect.provide(withStub(
          flow({
            body: {
              object: "media.upload.list",
              data: [],
              errors: [{ id: "upl_1", code: "upload_type_mismatch", message: "not a PNG" }]
            }
          }),
          []
        )))
      )
      // The code of a 200's `errors` entry while the contract still carries `errors`; a generic one once it does not.
      const carriesErrors = "errors" in MediaUploadList.fields
      expect(partial).toMatchObject({
        _tag: "GatewayError",
        code: carriesErrors ? "upload_type_mismatch" : "upload_not_confirmed"
      })
      expect((partial as GatewayError).message).toContain(png)
    }))
})

describe("the contract as the client sees it", () => {
  it("adds the request schemas the handlers read by hand, which the OpenAPI document shows too", () => {
    const endpoint = (api: typeof GatewayApi | typeof GatewayClientApi) =>
      (api as unknown as HttpApi.HttpApi.AnyWithProps).groups.taskCreate!.endpoints.createImageTask!
    const server = endpoint(GatewayApi)
    const client = endpoint(GatewayClientApi)
    // Same route and answers; only the client's side declares the body and Idempotency-Key.
    expect([client.method, client.path, client.successSchema]).toEqual([
      server.method,
      server.path,
      server.successSchema
    ])
    expect(Option.isNone(server.payloadSchema)).toBe(true)
    expect(Option.isSome(client.payloadSchema) && Option.isSome(client.headersSchema)).toBe(true)
    const content = (OpenApi.fromApi(GatewayApi) as any).paths["/v1/image/tasks"].post.requestBody.content
    expect(Object.keys(content).sort()).toEqual(["application/json", "multipart/form-data"])
    expect(content["application/json"].schema.required).toEqual(expect.arrayContaining(["model", "operation", "input"]))
    expect(Object.keys(content["multipart/form-data"].schema.properties)).toEqual(
      expect.arrayContaining(["image", "mask", "prompt"])
    )
  })
})
