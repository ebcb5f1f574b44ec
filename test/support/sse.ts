import type { Target } from "./http.ts"

/** One server-sent event, or a comment line (`comment` set, the rest empty). */
export interface SseEvent {
  readonly id?: string
  readonly event?: string
  readonly data?: any
  readonly comment?: string
}

/** An open `text/event-stream` response, read event by event. */
export interface SseStream {
  readonly status: number
  readonly headers: Headers
  /** The JSON error body when the answer was not a stream. */
  readonly body?: any
  /** The next event (comments skipped unless `comments`); undefined once the server ended the stream. */
  readonly next: (options?: { readonly comments?: boolean }) => Promise<SseEvent | undefined>
  /** Every remaining event until the server ends the stream. */
  readonly rest: () => Promise<Array<SseEvent>>
  /** Drops the connection. */
  readonly close: () => void
}

/** Opens an event stream over real HTTP, without reading it until asked. */
export const openEvents = async (
  gw: Target,
  path: string,
  key: string,
  headers: Record<string, string> = {}
): Promise<SseStream> => {
  const abort = new AbortController()
  const res = await fetch(gw.url + path, {
    headers: { authorization: `Bearer ${key}`, accept: "text/event-stream", ...headers },
    signal: abort.signal
  })
  const close = () => abort.abort()
  if (!(res.headers.get("content-type") ?? "").startsWith("text/event-stream")) {
    const text = await res.text()
    const body = (res.headers.get("content-type") ?? "").includes("json") ? JSON.parse(text) : text
    return { status: res.status, headers: res.headers, body, next: async () => undefined, rest: async () => [], close }
  }
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader()
  let buffer = ""
  let ended = false
  const block = async (): Promise<string | undefined> => {
    while (true) {
      const at = buffer.indexOf("\n\n")
      if (at >= 0) {
        const found = buffer.slice(0, at)
        buffer = buffer.slice(at + 2)
        return found
      }
      if (ended) return undefined
      const chunk = await reader.read()
      if (chunk.done) ended = true
      else buffer += chunk.value
    }
  }
  const next = async (options: { readonly comments?: boolean } = {}): Promise<SseEvent | undefined> => {
    while (true) {
      const text = await block()
      if (text === undefined) return undefined
      const fields: Record<string, string> = {}
      let comment: string | undefined
      for (const line of text.split("\n")) {
        if (line.startsWith(":")) comment = line.slice(1).trim()
        else {
          const colon = line.indexOf(":")
          fields[line.slice(0, colon)] = line.slice(colon + 1).replace(/^ /, "")
        }
      }
      if (comment !== undefined && Object.keys(fields).length === 0) {
        if (options.comments) return { comment }
        continue
      }
      return {
        ...(fields.id === undefined ? {} : { id: fields.id }),
        ...(fields.event === undefined ? {} : { event: fields.event }),
        ...(fields.data === undefined ? {} : { data: JSON.parse(fields.data) })
      }
    }
  }
  const rest = async () => {
    const all: Array<SseEvent> = []
    for (let e = await next(); e !== undefined; e = await next()) all.push(e)
    return all
  }
  return { status: res.status, headers: res.headers, next, rest, close }
}
