import { createServer, type IncomingHttpHeaders, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { Webhook } from "standardwebhooks"
import { eventually } from "./eventually.ts"

/**
 * A real webhook receiver on loopback: records every request it gets (time of
 * arrival, headers, raw body) and answers as the test says: a status code
 * (with headers), or "hang" to never answer (the sender's time-out decides).
 */
export interface Receipt {
  /** Milliseconds since the epoch when the request's body had arrived. */
  readonly at: number
  readonly method: string
  readonly headers: IncomingHttpHeaders
  readonly body: string
  readonly json: any
}

export type Answer = number | "hang" | { readonly status: number; readonly headers: Record<string, string> }

export interface Receiver {
  readonly url: string
  readonly receipts: Array<Receipt>
  /** Resolves once `n` requests have arrived; throws after the deadline. */
  readonly waitFor: (n: number, deadlineMs?: number) => Promise<Array<Receipt>>
  readonly close: () => Promise<void>
}

export const startReceiver = async (
  answer: (receipt: Receipt, index: number) => Answer | Promise<Answer> = () => 200
): Promise<Receiver> => {
  const receipts: Array<Receipt> = []
  const hanging = new Set<ServerResponse>()
  const server = createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", async () => {
      const body = Buffer.concat(chunks).toString("utf8")
      let json: unknown
      try {
        json = JSON.parse(body)
      } catch {
        json = undefined
      }
      const receipt: Receipt = { at: Date.now(), method: req.method ?? "", headers: req.headers, body, json }
      receipts.push(receipt)
      const reply = await answer(receipt, receipts.length - 1)
      if (reply === "hang") {
        hanging.add(res)
        return
      }
      const [status, headers] = typeof reply === "number" ? [reply, {}] : [reply.status, reply.headers]
      res.writeHead(status, { "content-type": "text/plain", ...headers }).end(`answer ${status}`)
    })
  })
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}/hooks/gateway`,
    receipts,
    waitFor: (n, deadlineMs = 30_000) =>
      eventually(() => receipts.length >= n && receipts.slice(), `${n} requests at the receiver`, {
        deadlineMs,
        intervalMs: 20
      }),
    close: () =>
      new Promise<void>((done) => {
        for (const res of hanging) res.destroy()
        server.closeAllConnections()
        server.close(() => done())
      })
  }
}

/**
 * Checks a request the way a receiver would with an off-the-shelf Standard
 * Webhooks library, the `wk-` key's UTF-8 bytes (base64) being the secret;
 * returns the verified payload, throws when the signature does not match.
 */
export const verifyStandardWebhook = (receipt: Receipt, key: string): any =>
  new Webhook(Buffer.from(key, "utf8").toString("base64")).verify(receipt.body, {
    "webhook-id": String(receipt.headers["webhook-id"]),
    "webhook-timestamp": String(receipt.headers["webhook-timestamp"]),
    "webhook-signature": String(receipt.headers["webhook-signature"])
  })
