import { connect } from "node:net"
import { eventually } from "./eventually.ts"

/**
 * One kept-alive HTTP/1.1 connection driven by hand, so a test decides which
 * requests share it (fetch's pool decides that itself). `send` writes one
 * request and waits for its whole answer; it fails when the connection is
 * reset or closed first, or nothing complete arrives within `deadlineMs`.
 * `close` is true when the answer announced `Connection: close`.
 */
export const keptAlive = async (port: number) => {
  const socket = connect(port, "127.0.0.1")
  await new Promise<void>((resolve, reject) => socket.once("connect", resolve).once("error", reject))
  let buffer = Buffer.alloc(0)
  let ended: string | undefined
  socket.on("data", (chunk: Buffer) => (buffer = Buffer.concat([buffer, chunk])))
  socket.on("error", (e: NodeJS.ErrnoException) => (ended = e.code ?? e.message))
  socket.on("close", () => (ended ??= "closed"))

  /** A complete answer at the start of the buffer (Content-Length or chunked), or undefined. */
  const takeAnswer = (): { status: number; body: string; close: boolean } | undefined => {
    const head = buffer.indexOf("\r\n\r\n")
    if (head < 0) return undefined
    const lines = buffer.subarray(0, head).toString("latin1").split("\r\n")
    const header = (name: string) => lines.find((l) => l.toLowerCase().startsWith(`${name}:`))?.split(":")[1]?.trim()
    let rest = buffer.subarray(head + 4)
    let body: Buffer
    if (header("transfer-encoding")?.toLowerCase() === "chunked") {
      const parts: Array<Buffer> = []
      for (;;) {
        const eol = rest.indexOf("\r\n")
        if (eol < 0) return undefined
        const size = parseInt(rest.subarray(0, eol).toString("latin1"), 16)
        if (rest.length < eol + 2 + size + 2) return undefined
        parts.push(rest.subarray(eol + 2, eol + 2 + size))
        rest = rest.subarray(eol + 2 + size + 2)
        if (size === 0) break
      }
      body = Buffer.concat(parts)
    } else {
      const length = Number(header("content-length") ?? 0)
      if (rest.length < length) return undefined
      body = rest.subarray(0, length)
      rest = rest.subarray(length)
    }
    buffer = rest
    const close = header("connection")?.toLowerCase() === "close"
    return { status: Number(lines[0]!.split(" ")[1]), body: body.toString("utf8"), close }
  }

  const send = async (head: string, body: Uint8Array = new Uint8Array(0), deadlineMs = 15_000) => {
    if (ended !== undefined) throw new Error(`connection already ${ended}`)
    socket.write(head + "\r\n\r\n")
    if (body.length > 0) socket.write(body)
    // `null`: the connection ended without an answer.
    const answer = await eventually(() => takeAnswer() ?? (ended === undefined ? undefined : null), "an answer", {
      deadlineMs,
      intervalMs: 20
    })
    if (answer === null) throw new Error(`connection ${ended} before an answer`)
    return answer
  }
  return { send, close: () => socket.destroy() }
}
