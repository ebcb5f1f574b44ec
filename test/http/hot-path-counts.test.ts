import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { adminApi, createAccount, type TestAccount } from "../support/adminApi.ts"
import { api } from "../support/api.ts"
import { backend } from "../support/database.ts"
import { eventually } from "../support/eventually.ts"
import { startGateway, type TestGateway } from "../support/gateway.ts"
import { raw } from "../support/http.ts"
import { METRICS_TOKEN, samplesOf, scrape } from "../support/metrics.ts"
import { counted, countingLayer, uninstall, type Work } from "../support/requestWork.ts"
import { videoRequest } from "../support/tasks.ts"

/**
 * What one request on a hot path does, counted rather than timed, so a
 * change that adds work to it fails here whatever the machine's speed:
 * statements sent to the database, spans started, log lines written and
 * Effect fibers started,
 * each attributed to the request (test/support/requestWork.ts), and the
 * metrics it records. Each path is warmed first so its caches are full (the
 * key look-up cache, prepared statements), as on a service that has been
 * polled for a while; the cold key's cost is counted on its own.
 *
 * The counts are the same on PGlite and PostgreSQL: a statement is one call
 * of the driver on both (on PostgreSQL a round trip; a prepared statement's
 * first run on a connection is still one).
 *
 * docs/architecture.md (Hot paths) says what each step of a read costs; a
 * change of these counts belongs there too.
 */

let gw: TestGateway
let acct: TestAccount
let taskId: string
let readPath: string

beforeAll(async () => {
  gw = await startGateway({ METRICS_TOKEN }, countingLayer)
  acct = await createAccount(gw, { name: "counted", wallet_credits: 1000 })
  taskId = (await api(gw, acct).createVideo(videoRequest())).id
  readPath = `/v1/video/tasks/${taskId}`
}, 120_000)
afterAll(async () => {
  uninstall()
  await gw?.close()
})

const get = (key: string, path: string) => (headers: Record<string, string>) => raw(gw, "GET", path, { key, headers })
const post = (key: string, path: string, json: unknown) => (headers: Record<string, string>) =>
  raw(gw, "POST", path, { key, headers, json })

/** The read of the task with its `ak_` key, counted. */
const countedRead = (key = acct.resource.key) => counted(get(key, readPath))

/** The statements, each matched in order by its pattern, and nothing more (the list shows on failure). */
const expectStatements = (work: Work, patterns: ReadonlyArray<RegExp>) => {
  const shown = `statements:\n${work.statements.join("\n")}`
  expect(work.statements, shown).toHaveLength(patterns.length)
  patterns.forEach((pattern, i) => expect(work.statements[i], shown).toMatch(pattern))
}

/** The one access log line, as the service writes it, for this answer. */
const expectAccessLine = (work: Work, method: string, path: string, status: number) => {
  expect(work.logLines, work.logLines.join("\n")).toHaveLength(1)
  const line = JSON.parse(work.logLines[0]!)
  expect(line).toMatchObject({ message: "request", logLevel: "INFO", annotations: { method, path, status } })
}

/** The read's one statement: the key's current state and the task, by primary keys (TaskStore.findWithKey). */
const READ = /^SELECT k\.disabled_at AS key_disabled_at, .* FROM api_keys k LEFT JOIN tasks t ON t\.id = \$1 /
/** The key's look-up by digest (accounts/Authenticate.ts), when this replica's cache does not have it. */
const KEY_LOOKUP =
  /^SELECT k\.\*, a\.group_name AS account_group FROM api_keys k JOIN accounts a .* WHERE k\.key_hash = \$1$/

/** Reads until one finds the key in this replica's cache (its listener must be up before it caches anything). */
const warmRead = (key = acct.resource.key) =>
  eventually(
    async () => {
      const { result, work } = await countedRead(key)
      return result.status === 200 && !work.statements.some((s) => KEY_LOOKUP.test(s))
    },
    "a read that finds its key in the cache",
    { deadlineMs: 10_000, intervalMs: 50 }
  )

describe(`what one request on a hot path does (${backend})`, () => {
  it("a task read, its key cached: one statement, the server span and the read's, one access log line", async () => {
    await warmRead()
    for (let i = 0; i < 3; i++) {
      const { result, work } = await countedRead()
      expect(result.status).toBe(200)
      expect((result.body as { id: string }).id).toBe(taskId)
      expectStatements(work, [READ])
      // Answered by the fast route (FastRoutes.ts), whose server span says so.
      expect(work.spans).toEqual(["TaskStore.findWithKey", "http.server GET [fast route]"])
      expectAccessLine(work, "GET", readPath, 200)
      // Its quick part (QuickFrame.ts): no fiber on PostgreSQL, whose pool takes the statement as a plain call;
      // one on PGlite, whose one connection is taken through an effect.
      expect(work.fibers).toBe(backend === "postgresql" ? 0 : 1)
    }
  })

  it("a task read with a key not cached yet: the key's look-up on top, with its span and its statement's", async () => {
    const key = await adminApi(gw)((c) => c.admin.createKey({ path: { id: acct.id }, payload: { kind: "resource" } }))
    const { result, work } = await countedRead(key.key)
    expect(result.status).toBe(200)
    expectStatements(work, [KEY_LOOKUP, READ])
    // The key check that goes to the database is the fiber's path: the request's one fiber.
    expect(work.fibers).toBe(1)
    expect(work.spans).toEqual([
      "Accounts.authenticate",
      "TaskStore.findWithKey",
      "http.server GET [fast route]",
      "sql.execute"
    ])
    expectAccessLine(work, "GET", readPath, 200)
  })

  it("a task read records one request in the HTTP metrics, and nothing else", async () => {
    await warmRead()
    const before = await exposition()
    const reads = 3
    for (let i = 0; i < reads; i++) expect((await countedRead()).result.status).toBe(200)
    const after = await exposition()
    const route = { method: "GET", route: "/v1/video/tasks/:task_id" }
    expect(after.value("mtg_http_requests_total", { ...route, status: "200" })).toBe(
      before.value("mtg_http_requests_total", { ...route, status: "200" }) + reads
    )
    expect(after.value("mtg_http_request_duration_seconds_count", route)).toBe(
      before.value("mtg_http_request_duration_seconds_count", route) + reads
    )
    // Every other counter and histogram series is as it was (gauges are read at the scrape; the scrape counts itself).
    const moved = after.samples
      .filter((s) => !after.gauges.has(s.name) && s.labels.route !== "/metrics")
      .filter((s) => before.value(s.name, s.labels) !== s.value)
      .filter((s) => s.labels.route !== route.route || !s.name.startsWith("mtg_http_request"))
    expect(moved).toEqual([])
  })

  it("a batch query, its key cached: one statement on the full path", async () => {
    const query = post(acct.resource.key, "/v1/video/tasks/query", { task_ids: [taskId] })
    await warmRead()
    expect((await counted(query)).result.status).toBe(200)
    const { result, work } = await counted(query)
    expect(result.status).toBe(200)
    expect((result.body as { data: Array<{ id: string }> }).data.map((t) => t.id)).toEqual([taskId])
    expectStatements(work, [
      /^SELECT id, kind, .* FROM tasks WHERE account_id = \$1 AND kind = \$2 AND "id" IN \(\$3\)$/
    ])
    // The full path: @effect/sql's statement span under the store's, no fast route; the HttpApi stack's fibers.
    expect(work.spans).toEqual(["TaskStore.findMany", "http.server POST", "sql.execute"])
    expect(work.fibers).toBe(5)
    expectAccessLine(work, "POST", "/v1/video/tasks/query", 200)
  })

  it("a create, its key cached: the charge and the INSERT in one statement, then the NOTIFY", async () => {
    const create = post(acct.model.key, "/v1/video/tasks", videoRequest())
    expect((await counted(create)).result.status).toBe(202)
    const { result, work } = await counted(create)
    expect(result.status).toBe(202)
    // One round trip and its own transaction: no BEGIN, no COMMIT, no lock held between round trips.
    expectStatements(work, [
      /^SELECT \* FROM create_task\(/,
      // The queue's wake-up, after the commit (TaskStore.create, Wakeups.ts), on a fiber of its own.
      /^SELECT pg_notify\(\$1, \$2\)$/
    ])
    // Both statements on the pool (PooledQuery): no statement span of @effect/sql's.
    // No references, so no span of their check.
    expect(work.spans).toEqual([
      "TaskStore.create",
      "Tasks.createVideo",
      "http.server POST [fast route]"
    ])
    expectAccessLine(work, "POST", "/v1/video/tasks", 202)
    // The create's own (the fast create's quick part runs only Tasks.createVideo on a fiber) and its wake-up's.
    expect(work.fibers).toBe(2)
  })
})

/** A scrape of `/metrics`: its samples, the names of its gauges, and a sample's value (0 when absent). */
const exposition = async () => {
  const text = (await scrape(gw, METRICS_TOKEN)).body as string
  const samples = samplesOf(text)
  const gauges = new Set([...text.matchAll(/^# TYPE (\S+) gauge$/gm)].map((m) => m[1]!))
  const value = (name: string, labels: Readonly<Record<string, string>>) => {
    const wanted = Object.entries(labels)
    const found = samples.find((s) =>
      s.name === name && Object.keys(s.labels).length === wanted.length &&
      wanted.every(([k, v]) => s.labels[k] === v)
    )
    return found?.value ?? 0
  }
  return { samples, gauges, value }
}
