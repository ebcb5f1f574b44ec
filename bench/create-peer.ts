/**
 * The node+pg peer of bench/create-path.ts: a bare node:http server doing
 * by hand what a create needs, with the gateway's own statement, so the
 * ratio shows what the gateway's layers cost on top of the transaction.
 * Per request: the body read (bounded) and parsed, the model and duration
 * checked, the key's SHA-256 looked up (joined with its account, as
 * Accounts.authenticate does on a cache miss; this peer caches nothing),
 * refused when unknown, disabled or not a model key; then `create_task`
 * (one statement and its own transaction: the account's lock, its checks,
 * the task's INSERT and the charge), the wake-up `pg_notify` after it, and
 * the task's JSON (TaskRow.toTaskObject) with 202.
 *
 * What the gateway derives from the request and its configuration (the
 * stored request, the price, the channel) comes from the environment, read
 * from the gateway's own first task, as pgbench's script takes it.
 *
 *   DATABASE_URL=postgres://… PORT=… MODEL=… REQUEST=… MICROS=… CHANNEL=… node --import tsx bench/create-peer.ts
 */
import { createHash, randomBytes, randomUUID } from "node:crypto"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import pg from "pg"
import { type TaskRow, toTaskObject } from "../src/tasks/TaskRow.ts"
import { lookUpKey } from "./peer-key.ts"

pg.types.setTypeParser(20, (value: string) => Number(value))

const env = (name: string) => {
  const value = process.env[name]
  if (value === undefined) throw new Error(`${name} is not set`)
  return value
}
const MODEL = env("MODEL")
const REQUEST = env("REQUEST")
const MICROS = Number(env("MICROS"))
const CHANNEL = env("CHANNEL")
const MAX_BODY = 1 << 20
const pool = new pg.Pool({ connectionString: env("DATABASE_URL"), max: 10 })

const send = (res: ServerResponse, status: number, body: unknown, requestId: string) => {
  res.writeHead(status, { "content-type": "application/json", "x-request-id": requestId })
  res.end(JSON.stringify(body))
}

const problem = (res: ServerResponse, status: number, code: string, message: string, requestId: string) =>
  send(res, status, { error: { type: "invalid_request_error", code, message, request_id: requestId } }, requestId)

const readBody = (req: IncomingMessage) =>
  new Promise<string | undefined>((ok, fail) => {
    const chunks: Array<Buffer> = []
    let size = 0
    req.on("data", (chunk: Buffer) => {
      size += chunk.length
      if (size > MAX_BODY) return ok(undefined)
      chunks.push(chunk)
    })
    req.on("end", () => ok(Buffer.concat(chunks).toString("utf8")))
    req.on("error", fail)
  })

const id = (prefix: string) => `${prefix}${randomBytes(11).toString("hex")}`

const create = async (req: IncomingMessage, res: ServerResponse, requestId: string) => {
  const text = await readBody(req)
  let body: any
  try {
    body = text === undefined ? undefined : JSON.parse(text)
  } catch {
    body = undefined
  }
  if (body?.model !== MODEL || typeof body?.output?.duration !== "number" || typeof body?.input?.prompt !== "string") {
    return problem(res, 400, "invalid_request", "Not the benchmark's request.", requestId)
  }
  const row = await lookUpKey(pool, req.headers.authorization)
  if (row === undefined) return problem(res, 401, "invalid_api_key", "Invalid key.", requestId)
  if (row.kind !== "model") return problem(res, 403, "permission_denied", "Wrong key kind.", requestId)
  const digest = createHash("sha256").update(text!).digest("hex")
  const now = Math.floor(Date.now() / 1000)
  const { rows } = await pool.query<{ outcome: string; task: TaskRow | null }>(
    `SELECT * FROM create_task($1, $2, $3, $4::bigint, false, '{}'::jsonb, true, $5, 'video', $6, 'generation',
      $7::jsonb, 1, NULL, NULL::jsonb, NULL, $8, $9::bigint, $10, NULL::jsonb, NULL::bigint)`,
    [row.account_id, row.id, id("led_"), MICROS, id("task_"), MODEL, REQUEST, digest, now, CHANNEL]
  )
  const created = rows[0]
  if (created?.outcome !== "charged" || created.task === null) {
    return problem(res, 402, "insufficient_balance", `Not charged: ${created?.outcome}.`, requestId)
  }
  await pool.query("SELECT pg_notify('tasks_queued', $1)", [CHANNEL])
  send(res, 202, toTaskObject(created.task), requestId)
}

const server = createServer((req, res) => {
  const requestId = randomUUID()
  if (req.method === "GET" && req.url === "/healthz") return send(res, 200, { ok: true }, requestId)
  if (req.method !== "POST" || req.url !== "/v1/video/tasks") {
    return problem(res, 404, "not_found", "No route.", requestId)
  }
  create(req, res, requestId).catch((error) => {
    if (!res.headersSent) send(res, 500, { error: { code: "internal_error", message: String(error) } }, requestId)
  })
})

server.listen(Number(env("PORT")), "127.0.0.1", () => process.send?.("ready"))
process.on("SIGTERM", () => server.close(() => void pool.end().then(() => process.exit(0))))
