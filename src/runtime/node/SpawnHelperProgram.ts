/**
 * The program of the spawn helper (SpawnHelper.ts), run as `node -e` so it
 * needs no file beside the bundle. It is plain CommonJS in a string because
 * it must not depend on anything the service's build adds (a bundler may
 * rewrite a function to call one of its helpers, which the child would not have).
 *
 * Messages (IPC, structured clone), parent → helper:
 *   start {id, command, args, cwd, env, stdio}   kill {id, signal}
 *   stdin {id, data}   stdin-end {id}   ack {id, stream, bytes}
 * helper → parent:
 *   spawn {id, pid}   error {id, code, syscall, message}   exit {id, code, signal}
 *   out|err {id, data}   out-end|err-end {id}   in-ack {id, error?}
 *
 * Output is sent as it comes, but never more than WINDOW bytes per stream
 * ahead of what the parent has acknowledged (it acknowledges as its
 * consumer reads): a stream nobody reads stops the child, as a full pipe
 * would, instead of filling the parent's memory.
 *
 * Children are started in their own process group (as the platform's Node
 * executor does), so `kill` reaches what they start in turn. The helper
 * ignores SIGINT, SIGTERM and SIGHUP: a terminal's Ctrl-C reaches the whole
 * foreground group, and the service may still be finishing work; the helper
 * leaves when its parent does (the IPC channel closes, even on SIGKILL),
 * and takes its children with it.
 */
export const SPAWN_HELPER_PROGRAM = String.raw`
"use strict"
const { spawn } = require("node:child_process")
const WINDOW = 1024 * 1024
const children = new Map()
const send = (message) => { if (process.connected) process.send(message) }
const killGroup = (child, signal) => {
  try { process.kill(-child.pid, signal) } catch { try { child.kill(signal) } catch {} }
}
const forward = (id, entry, name) => {
  const readable = entry.child[name === "out" ? "stdout" : "stderr"]
  if (!readable) return send({ id, ev: name + "-end" })
  readable.on("data", (data) => {
    send({ id, ev: name, data })
    entry.unacked[name] += data.length
    if (entry.unacked[name] > WINDOW) readable.pause()
  })
  readable.on("end", () => send({ id, ev: name + "-end" }))
  readable.on("error", () => {})
}
const start = (m) => {
  let child
  try {
    child = spawn(m.command, m.args, { cwd: m.cwd, env: m.env, stdio: m.stdio, detached: process.platform !== "win32" })
  } catch (e) {
    return send({ id: m.id, ev: "error", code: e.code, syscall: e.syscall, message: String(e.message) })
  }
  const entry = { child, unacked: { out: 0, err: 0 } }
  children.set(m.id, entry)
  child.on("error", (e) => {
    send({ id: m.id, ev: "error", code: e.code, syscall: e.syscall, message: String(e.message) })
  })
  child.on("spawn", () => {
    send({ id: m.id, ev: "spawn", pid: child.pid })
    forward(m.id, entry, "out")
    forward(m.id, entry, "err")
  })
  child.on("exit", (code, signal) => send({ id: m.id, ev: "exit", code, signal }))
  child.on("close", () => children.delete(m.id))
  if (child.stdin) child.stdin.on("error", () => {})
}
process.on("message", (m) => {
  const entry = children.get(m.id)
  switch (m.op) {
    case "start": return start(m)
    case "kill": return entry && killGroup(entry.child, m.signal)
    case "ack": {
      if (!entry) return
      entry.unacked[m.stream] -= m.bytes
      const readable = entry.child[m.stream === "out" ? "stdout" : "stderr"]
      if (readable && readable.isPaused() && entry.unacked[m.stream] <= WINDOW) readable.resume()
      return
    }
    case "stdin":
      if (!entry || !entry.child.stdin) return send({ id: m.id, ev: "in-ack", error: "stdin is closed" })
      return entry.child.stdin.write(m.data, (e) => send({ id: m.id, ev: "in-ack", error: e ? String(e.message) : undefined }))
    case "stdin-end": return entry && entry.child.stdin && entry.child.stdin.end()
  }
})
process.on("disconnect", () => {
  for (const entry of children.values()) killGroup(entry.child, "SIGKILL")
  process.exit(0)
})
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) process.on(signal, () => {})
`
