import fc from "fast-check"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { GatewayApi } from "../../src/Api.ts"
import { createAccount } from "../support/adminApi.ts"
import { configWith } from "../support/config.ts"
import { backend } from "../support/database.ts"
import { ADMIN_TOKEN, startGateway, type TestGateway } from "../support/gateway.ts"
import { fetchRetryingReset } from "../support/http.ts"
import { videoRequest } from "../support/tasks.ts"

/**
 * Property-based fuzzing of every endpoint of the contract: random JSON,
 * strings of every Unicode category with NUL and lone surrogates, hostile
 * nesting, mutations of valid requests and random multipart bodies. Each
 * answer must be a 2xx (or 3xx) or a 4xx with the spec's error body, within a
 * deadline; never a 5xx; and the server keeps answering `/healthz`.
 *
 * CI runs a bounded count with a fixed seed on both databases. A longer run:
 * `FUZZ_RUNS=20000 FUZZ_SEED=$RANDOM npx vitest run test/http/fuzz-api.test.ts`
 * (docs/testing.md, Fuzzing).
 */

const RUNS = Number(process.env.FUZZ_RUNS ?? 250)
const SEED = Number(process.env.FUZZ_SEED ?? 20_261_123)
const DEADLINE_MS = 15_000

let gw: TestGateway
let keys: { model: string; resource: string }
let accountId: string

beforeAll(async () => {
  // No engine runs here (ROLE=api), so the synchronous image endpoints answer 202 after their short wait.
  const config = configWith("limits.json", (limits) => {
    limits.sync_wait_s = 1
    for (const rate of Object.values(limits.rate_limits) as Array<any>) rate.burst = rate.per_second = 100_000
  })
  gw = await startGateway({ CONFIG_DIR: config })
  const acct = await createAccount(gw, { name: "fuzz", wallet_credits: 1_000_000 })
  keys = { model: acct.model.key, resource: acct.resource.key }
  accountId = acct.id
})
afterAll(() => gw?.close())

interface Route {
  readonly method: string
  readonly path: string
}

/** Every endpoint of the contract, so a new one is fuzzed without editing this test. */
const routes: ReadonlyArray<Route> = Object.values(GatewayApi.groups).flatMap((group) =>
  Object.values(group.endpoints).map((e) => ({ method: e.method, path: e.path }))
)

/** Text with what databases and parsers choke on mixed into every Unicode category. */
const hostileString = fc.oneof(
  fc.string({ unit: "binary", maxLength: 40 }),
  fc.string({ unit: "grapheme", maxLength: 40 }),
  fc.constantFrom(
    "\u0000",
    "a\u0000b",
    "\ud800",
    "x\udfffy",
    "\ud83d",
    "\u202e",
    "\ufeff",
    "%00",
    "../..",
    "' OR 1=1 --",
    "__proto__",
    "constructor"
  ),
  fc.string({ unit: "binary-ascii", maxLength: 300 })
)

const deep = fc.integer({ min: 60, max: 3000 }).map((depth) => {
  let value: unknown = "leaf"
  for (let i = 0; i < depth; i++) value = i % 2 ? [value] : { d: value }
  return value
})

const jsonish: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small" },
    hostileString,
    fc.integer(),
    fc.double(),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie("value"), { maxLength: 4 }),
    fc.dictionary(hostileString, tie("value"), { maxKeys: 4 })
  )
})).value

/** Valid-looking starting points, so mutations reach past the first check. */
const seeds: Record<string, () => unknown> = {
  "/v1/video/tasks": () => videoRequest({ metadata: { a: 1 }, client_reference_id: "r" }),
  "/v1/image/tasks": () => ({
    model: "provx-image-1",
    operation: "generation",
    input: { prompt: "p" },
    output: { count: 1 }
  }),
  "/v1/images/generations": () => ({ model: "provx-image-1", prompt: "p", n: 1, size: "512x512" }),
  "/v1/video/tasks/query": () => ({ task_ids: ["task_x"] }),
  "/v1/image/tasks/query": () => ({ task_ids: ["task_x"] }),
  "/v1/media/uploads": () => ({
    files: [{ client_id: "c", kind: "video", filename: "a.mp4", mime_type: "video/mp4", size_bytes: 1000 }]
  }),
  "/v1/media/uploads/complete": () => ({ upload_ids: ["upl_x"] }),
  "/v1/image/uploads/base64": () => ({ images: ["aGVsbG8="] }),
  "/admin/v1/accounts": () => ({ name: "n", wallet_credits: 1 })
}

/** Replaces one leaf (or adds one member) of `value` somewhere down its tree. */
const mutate = (value: unknown, path: ReadonlyArray<number>, replacement: unknown): unknown => {
  if (path.length === 0 || value === null || typeof value !== "object") return replacement
  const [step, ...rest] = path
  if (Array.isArray(value)) {
    if (value.length === 0) return [replacement]
    const i = step! % value.length
    return value.map((v, j) => (j === i ? mutate(v, rest, replacement) : v))
  }
  const entries = Object.entries(value)
  if (entries.length === 0 || step! % 5 === 4) return { ...value, [`extra${step}`]: replacement }
  const [key, child] = entries[step! % entries.length]!
  return { ...value, [key]: mutate(child, rest, replacement) }
}

const jsonBody = (path: string) =>
  fc.oneof(
    jsonish.map((v) => JSON.stringify(v)),
    deep.map((v) => JSON.stringify({ ...(seeds[path]?.() as object ?? {}), metadata: v })),
    {
      arbitrary: fc.tuple(fc.array(fc.nat(), { maxLength: 5 }), fc.oneof(hostileString, jsonish)).map(([at, v]) =>
        JSON.stringify(mutate(seeds[path]?.() ?? {}, at, v))
      ),
      weight: 4
    },
    fc.string({ unit: "binary", maxLength: 200 })
  )

/** A multipart body: random parts, boundaries, truncations and stray bytes. */
const multipart = fc.record({
  parts: fc.array(
    fc.record({
      name: fc.oneof(
        fc.constantFrom("model", "operation", "prompt", "image", "image[]", "mask", "size", "n"),
        hostileString
      ),
      filename: fc.option(hostileString, { nil: undefined }),
      value: fc.oneof(hostileString, fc.uint8Array({ maxLength: 300 }).map((b) => Buffer.from(b).toString("latin1")))
    }),
    { maxLength: 6 }
  ),
  cut: fc.option(fc.nat(), { nil: undefined }),
  close: fc.boolean()
}).map(({ close, cut, parts }) => {
  const boundary = "fuzzBoundary42"
  let body = parts.map((p) =>
    `--${boundary}\r\nContent-Disposition: form-data; name="${p.name}"${
      p.filename === undefined ? "" : `; filename="${p.filename}"`
    }\r\n\r\n${p.value}\r\n`
  ).join("") + (close ? `--${boundary}--\r\n` : "")
  if (cut !== undefined && body.length > 0) {
    body = body.slice(0, cut % body.length)
  }
  return { contentType: `multipart/form-data; boundary=${boundary}`, body: Buffer.from(body, "latin1") }
})

const MULTIPART_PATHS = new Set(["/v1/image/uploads", "/v1/image/tasks", "/v1/images/edits"])

const keyFor = (route: Route) =>
  route.path.startsWith("/admin/") ?
    ADMIN_TOKEN
    : route.method === "POST" &&
        ["/v1/video/tasks", "/v1/image/tasks", "/v1/images/generations", "/v1/images/edits"].includes(route.path)
    ? keys.model
    : keys.resource

const request = (routeIndex: number) => {
  const route = routes[routeIndex % routes.length]!
  const segment = fc.oneof(hostileString, fc.constant(accountId), fc.constantFrom("task_x", "asset_x", "key_x"))
  const pathArb = fc.array(segment, { minLength: 4, maxLength: 4 }).map((values) => {
    let i = 0
    return route.path.replace(/:[a-z_]+/g, () => encodeSegment(values[i++]!))
  })
  const query = fc.option(fc.dictionary(hostileString, hostileString, { maxKeys: 3 }), { nil: undefined })
  const body = MULTIPART_PATHS.has(route.path)
    ? fc.oneof(multipart, jsonBody(route.path).map((b) => ({ contentType: "application/json", body: Buffer.from(b) })))
    : jsonBody(route.path).map((b) => ({ contentType: "application/json", body: Buffer.from(b) }))
  return fc.record({
    path: pathArb,
    query,
    body,
    auth: fc.oneof({ arbitrary: fc.constant(true), weight: 4 }, { arbitrary: fc.constant(false), weight: 1 })
  }).map((r) => ({ route, ...r }))
}

/** URL-encodes a segment; a lone surrogate (which `encodeURIComponent` refuses) goes as its WTF-8 bytes. */
const encodeSegment = (value: string) =>
  value.isWellFormed() ? encodeURIComponent(value) : `${encodeURIComponent(value.toWellFormed())}%ED%A0%80`

/** Half the cases go to the endpoints that store what they are sent, starting from a valid request. */
const seededRoutes = routes.flatMap((r, i) => (r.method === "POST" && r.path in seeds ? [i] : []))
const fuzzCase = fc.oneof(fc.nat(), fc.constantFrom(...seededRoutes)).chain(request)

type FuzzCase = typeof fuzzCase extends fc.Arbitrary<infer T> ? T : never

const send = async (c: FuzzCase) => {
  const url = new URL(gw.url + c.path)
  for (const [k, v] of Object.entries(c.query ?? {})) url.searchParams.append(k, v)
  const headers: Record<string, string> = {}
  if (c.auth) headers.authorization = `Bearer ${keyFor(c.route)}`
  const hasBody = c.route.method !== "GET" && c.route.method !== "DELETE" && c.route.method !== "HEAD"
  if (hasBody) headers["content-type"] = c.body.contentType
  const res = await fetchRetryingReset(url.toString(), {
    method: c.route.method,
    headers,
    ...(hasBody ? { body: c.body.body } : {}),
    signal: AbortSignal.timeout(DEADLINE_MS)
  })
  const text = await res.text()
  return {
    status: res.status,
    text,
    contentType: res.headers.get("content-type") ?? "",
    requestId: res.headers.get("x-request-id")
  }
}

describe(`fuzzing every endpoint (${backend})`, () => {
  it(
    `${RUNS} random requests (seed ${SEED}): never a 5xx, every 4xx the spec's error body, /healthz throughout`,
    async () => {
      expect(routes.length).toBeGreaterThan(20)
      let sent = 0
      const statuses = new Map<number, number>()
      await fc.assert(
        fc.asyncProperty(fuzzCase, async (c) => {
          const reply = await send(c)
          sent++
          statuses.set(reply.status, (statuses.get(reply.status) ?? 0) + 1)
          const where = `${c.route.method} ${c.path}`
          expect(reply.status, `${where}: ${reply.text.slice(0, 300)}`).toBeLessThan(500)
          if (reply.status >= 400) {
            expect(reply.contentType, where).toContain("application/json")
            const body = JSON.parse(reply.text)
            expect(Object.keys(body.error).sort(), where).toEqual(["code", "message", "request_id", "type"])
            expect(body.error.request_id, where).toBe(reply.requestId)
          }
          if (sent % 25 === 0) {
            expect((await fetch(`${gw.url}/healthz`, { signal: AbortSignal.timeout(5000) })).status).toBe(200)
          }
        }),
        { seed: SEED, numRuns: RUNS, endOnFailure: true }
      )
      expect((await fetch(`${gw.url}/healthz`)).status).toBe(200)
      // The cases reach past authentication and validation, not only the first refusal.
      console.info(`fuzz statuses: ${JSON.stringify(Object.fromEntries([...statuses].sort((a, b) => a[0] - b[0])))}`)
      expect([...statuses.keys()].some((s) => s >= 200 && s < 300)).toBe(true)
      expect(statuses.get(400) ?? 0).toBeGreaterThan(RUNS / 10)
    },
    600_000
  )
})
