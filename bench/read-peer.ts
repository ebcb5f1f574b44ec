/**
 * The peers of bench/read-path.ts: fastify + pg (`PEER=fastify`, the
 * default) and a bare node:http + pg server (`PEER=node`), each doing the
 * gateway's authenticated task lookup by hand, so the ratios show what the
 * gateway's own layers cost. Same work per request: digest the presented
 * key, look the key up (joined with its account, as Accounts.authenticate
 * does), refuse unknown or disabled keys and keys of the wrong kind, look
 * the task up under that account, answer the same JSON
 * (TaskRow.toTaskObject).
 *
 *   DATABASE_URL=postgres://… PORT=… [PEER=node] node --import tsx bench/read-peer.ts
 */
import Fastify from "fastify"
import { randomUUID } from "node:crypto"
import { createServer } from "node:http"
import pg from "pg"
import { taskColumns, type TaskRow, toTaskObject } from "../src/tasks/TaskRow.ts"
import { lookUpKey } from "./peer-key.ts"

// The gateway reads int8 columns as numbers (src/runtime/node/PostgresClient.ts); so must the peer for the same JSON.
pg.types.setTypeParser(20, (value: string) => Number(value))

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 })
const TASK = /^\/v1\/video\/tasks\/([^/?]+)$/

const problem = (status: number, type: string, code: string, message: string, requestId: string) => ({
  status,
  body: { error: { type, code, message, request_id: requestId } }
})

/** The read's answer, the same on both servers. */
const answerRead = async (authorization: string | undefined, id: string, requestId: string) => {
  const row = await lookUpKey(pool, authorization)
  if (row === undefined) {
    return problem(401, "authentication_error", "invalid_api_key", "Invalid API key.", requestId)
  }
  if (row.kind !== "resource") {
    return problem(403, "permission_error", "permission_denied", "Wrong key kind.", requestId)
  }
  const { rows: tasks } = await pool.query<TaskRow>(
    `SELECT ${taskColumns()} FROM tasks WHERE id = $1 AND account_id = $2 AND kind = 'video'`,
    [id, row.account_id]
  )
  if (tasks[0] === undefined) {
    return problem(404, "invalid_request_error", "task_not_found", "No such task.", requestId)
  }
  return { status: 200, body: toTaskObject(tasks[0]) }
}

const port = Number(process.env.PORT)
let close: () => Promise<void>

if (process.env.PEER === "node") {
  const server = createServer((request, response) => {
    const found = request.method === "GET" ? TASK.exec(request.url ?? "") : null
    const requestId = randomUUID()
    const answer = found === null
      ? Promise.resolve(problem(404, "invalid_request_error", "not_found", "No such route.", requestId))
      : answerRead(request.headers.authorization, found[1]!, requestId)
    void answer.then((a) => {
      const body = JSON.stringify(a.body)
      response.writeHead(a.status, {
        "content-type": "application/json",
        "content-length": Buffer.byteLength(body),
        "x-request-id": requestId
      })
      response.end(body)
    })
  })
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve))
  close = () => new Promise((resolve) => server.close(() => resolve()))
} else {
  const app = Fastify({ logger: false })
  app.get<{ Params: { id: string } }>("/v1/video/tasks/:id", async (request, reply) => {
    const requestId = randomUUID()
    reply.header("x-request-id", requestId)
    const answer = await answerRead(request.headers.authorization, request.params.id, requestId)
    reply.code(answer.status).header("content-type", "application/json").send(JSON.stringify(answer.body))
  })
  await app.listen({ host: "127.0.0.1", port })
  close = () => app.close()
}

process.send?.("ready")
process.on("SIGTERM", () => void close().then(() => pool.end()).then(() => process.exit(0)))
