/**
 * The peer of bench/read-path.ts: fastify + pg doing the gateway's
 * authenticated task lookup by hand, so the ratio shows what the gateway's
 * own layers cost. Same work per request: digest the presented key, look the
 * key up (joined with its account, as Accounts.authenticate does), refuse
 * unknown or disabled keys and keys of the wrong kind, look the task up
 * under that account, answer the same JSON (TaskRow.toTaskObject).
 *
 *   DATABASE_URL=postgres://… PORT=… node --import tsx bench/read-peer.ts
 */
import Fastify from "fastify"
import { randomUUID } from "node:crypto"
import pg from "pg"
import { taskColumns, type TaskRow, toTaskObject } from "../src/tasks/TaskRow.ts"
import { lookUpKey } from "./peer-key.ts"

// The gateway reads int8 columns as numbers (src/runtime/node/PostgresClient.ts); so must the peer for the same JSON.
pg.types.setTypeParser(20, (value: string) => Number(value))

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 })
const app = Fastify({ logger: false })

const problem = (status: number, type: string, code: string, message: string, requestId: string) => ({
  status,
  body: { error: { type, code, message, request_id: requestId } }
})

app.get<{ Params: { id: string } }>("/v1/video/tasks/:id", async (request, reply) => {
  const requestId = randomUUID()
  reply.header("x-request-id", requestId)
  const answer = await (async () => {
    const row = await lookUpKey(pool, request.headers.authorization)
    if (row === undefined) {
      return problem(401, "authentication_error", "invalid_api_key", "Invalid API key.", requestId)
    }
    if (row.kind !== "resource") {
      return problem(403, "permission_error", "permission_denied", "Wrong key kind.", requestId)
    }
    const { rows: tasks } = await pool.query<TaskRow>(
      `SELECT ${taskColumns()} FROM tasks WHERE id = $1 AND account_id = $2 AND kind = 'video'`,
      [request.params.id, row.account_id]
    )
    if (tasks[0] === undefined) {
      return problem(404, "invalid_request_error", "task_not_found", "No such task.", requestId)
    }
    return { status: 200, body: toTaskObject(tasks[0]) }
  })()
  reply.code(answer.status).header("content-type", "application/json").send(JSON.stringify(answer.body))
})

const port = Number(process.env.PORT)
await app.listen({ host: "127.0.0.1", port })
process.send?.("ready")
process.on("SIGTERM", () => void app.close().then(() => pool.end()).then(() => process.exit(0)))
