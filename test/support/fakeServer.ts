import type { IncomingHttpHeaders, Server } from "node:http"
import type { AddressInfo, Socket } from "node:net"

/**
 * The HTTP plumbing the fake upstreams (test/fakes/) share: a server on a
 * free loopback port that can be closed at once, and a request body read as
 * fields and files.
 */

/**
 * Listens on a free loopback port. `close` cuts every open connection
 * first (a request a fault left hanging, a kept-alive socket), so it never
 * waits on one.
 */
export const listenOnLoopback = async (server: Server) => {
  const sockets = new Set<Socket>()
  server.on("connection", (s) => {
    sockets.add(s)
    s.on("close", () => sockets.delete(s))
  })
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done))
  const { port } = server.address() as AddressInfo
  return {
    port,
    close: () =>
      new Promise<void>((done) => {
        for (const s of sockets) s.destroy()
        server.close(() => done())
      })
  }
}

/** A multipart body's parts in order (text fields as strings, files as bytes), or undefined when it is not multipart. */
export const multipartParts = async (
  method: string,
  path: string,
  headers: IncomingHttpHeaders,
  body: Buffer
): Promise<Array<[string, string | Uint8Array]> | undefined> => {
  const type = String(headers["content-type"] ?? "")
  if (!type.startsWith("multipart/form-data")) return undefined
  const form = await new Request("http://fake" + path, {
    method,
    headers: { "content-type": type },
    body: new Uint8Array(body)
  })
    .formData()
  const parts: Array<[string, string | Uint8Array]> = []
  for (const [name, value] of form as unknown as Iterable<[string, string | Blob]>) {
    parts.push([name, typeof value === "string" ? value : new Uint8Array(await value.arrayBuffer())])
  }
  return parts
}

/**
 * A request as a fake records it: when it came, its method, path and
 * headers, and its body's fields and files: multipart form data (a repeated
 * file name keeps the last), else a JSON object.
 */
export const readRequest = async (method: string, path: string, headers: IncomingHttpHeaders, body: Buffer) => {
  const fields: Record<string, any> = {}
  const files: Record<string, Uint8Array> = {}
  const parts = await multipartParts(method, path, headers, body)
  if (parts !== undefined) {
    for (const [name, value] of parts) {
      if (typeof value === "string") fields[name] = value
      else files[name] = value
    }
  } else if (body.length > 0) Object.assign(fields, JSON.parse(body.toString("utf8")))
  return { at: Date.now(), method, path, headers, fields, files }
}
