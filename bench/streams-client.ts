/**
 * The client side of bench/streams.ts, in a process of its own so that
 * thousands of open sockets and their parsing cost the measured gateway
 * nothing but the connections themselves. Each stream is a raw TCP socket
 * (no HTTP client library, no agent): the request is written by hand, the
 * chunked answer decoded and its `task` events counted, with the last status
 * kept. Driven by the parent over IPC:
 *
 *   { open: { port, key, paths, concurrency } } → { opened, refused } once every stream has its first event
 *   { counts: true }                            → { counts: Counts }
 *   { close: true }                             → the sockets destroyed, then the process exits
 */
import { connect, type Socket } from "node:net"

export interface Counts {
  readonly streams: number
  /** Streams with at least k task events, by k (index 0: at least 1). */
  readonly withEvents: ReadonlyArray<number>
  readonly events: number
  /** Streams the server ended (the terminating chunk, or the connection closed). */
  readonly ended: number
  /** Ended streams whose last event was a terminal status. */
  readonly endedTerminal: number
}

interface Watch {
  events: number
  last: string
  ended: boolean
  socket: Socket
}

const watches: Array<Watch> = []
const MAX_COUNTED = 8

/** One stream; resolves at its first task event, rejects when the answer is not a 200 stream. */
const open = (port: number, key: string, path: string) =>
  new Promise<void>((opened, refused) => {
    const socket = connect({ host: "127.0.0.1", port })
    socket.setNoDelay(true)
    const watch: Watch = { events: 0, last: "", ended: false, socket }
    watches.push(watch)
    let head = true
    let raw = ""
    // Chunked transfer decoding: bytes of the current chunk still to read (-1: a size line is next), then its CRLF.
    let size = -1
    let crlf = 0
    let text = ""
    const end = () => {
      if (watch.ended) return
      watch.ended = true
      socket.destroy()
      refused(new Error(`${path}: ended before its first event`))
    }
    socket.on("connect", () =>
      socket.write(
        `GET ${path} HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\nauthorization: Bearer ${key}\r\n` +
          `accept: text/event-stream\r\nconnection: close\r\n\r\n`
      ))
    socket.setEncoding("latin1")
    socket.on("data", (data: string) => {
      raw += data
      if (head) {
        const at = raw.indexOf("\r\n\r\n")
        if (at < 0) return
        const status = Number(raw.slice(9, 12))
        if (status !== 200) {
          watch.ended = true
          socket.destroy()
          return refused(new Error(`${path}: ${status} ${raw.slice(at + 4, at + 300)}`))
        }
        head = false
        raw = raw.slice(at + 4)
      }
      while (raw.length > 0) {
        if (crlf > 0) {
          const skip = Math.min(crlf, raw.length)
          raw = raw.slice(skip)
          crlf -= skip
          continue
        }
        if (size < 0) {
          const nl = raw.indexOf("\r\n")
          if (nl < 0) return
          size = parseInt(raw.slice(0, nl), 16)
          raw = raw.slice(nl + 2)
          if (size === 0) return end()
        }
        const take = Math.min(size, raw.length)
        text += raw.slice(0, take)
        raw = raw.slice(take)
        size -= take
        if (size > 0) return
        size = -1
        crlf = 2
        let block: number
        while ((block = text.indexOf("\n\n")) >= 0) {
          const event = text.slice(0, block)
          text = text.slice(block + 2)
          if (!event.includes("event: task")) continue
          watch.events++
          watch.last = /"status":"(\w+)"/.exec(event)?.[1] ?? "?"
          if (watch.events === 1) opened()
        }
      }
    })
    socket.on("error", () => end())
    socket.on("close", () => end())
  })

const counts = (): Counts => {
  const withEvents = Array.from({ length: MAX_COUNTED }, () => 0)
  let events = 0
  let ended = 0
  let endedTerminal = 0
  for (const w of watches) {
    events += w.events
    for (let k = 0; k < Math.min(w.events, MAX_COUNTED); k++) withEvents[k]!++
    if (w.ended) {
      ended++
      if (w.last === "succeeded" || w.last === "failed") endedTerminal++
    }
  }
  return { streams: watches.length, withEvents, events, ended, endedTerminal }
}

process.on("message", async (message: any) => {
  if (message.open) {
    const { port, key, paths, concurrency } = message.open as {
      port: number
      key: string
      paths: Array<string>
      concurrency: number
    }
    let next = 0
    let opened = 0
    const refused: Array<string> = []
    await Promise.all(Array.from({ length: concurrency }, async () => {
      while (next < paths.length) {
        const path = paths[next++]!
        await open(port, key, path).then(() => opened++, (e: Error) => refused.push(e.message))
      }
    }))
    process.send!({ opened, refused: refused.slice(0, 5), refusedCount: refused.length })
  } else if (message.counts) {
    process.send!({ counts: counts() })
  } else if (message.close) {
    for (const w of watches) w.socket.destroy()
    process.exit(0)
  }
})
process.send!({ ready: true })
