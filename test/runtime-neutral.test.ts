// Runs once: no database (left out of the PostgreSQL pass, vitest.config.ts).
import { readdirSync, readFileSync, statSync } from "node:fs"
import { join, relative } from "node:path"
import { describe, expect, it } from "vitest"

/** Node-only code lives in these places; everything else must run on Deno too (docs/architecture.md, Arrows). */
const NODE_ALLOWED = ["src/main.ts", "src/runtime/"]

const files = (dir: string): Array<string> =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    return statSync(path).isDirectory() ? files(path) : path.endsWith(".ts") ? [path] : []
  })

describe("runtime-neutral core", () => {
  it("src/, plugins/ and channels/ import no node:* module outside the runtime layer, and use no require or __dirname", () => {
    const offenders: Array<string> = []
    for (const file of [...files("src"), ...files("plugins"), ...files("channels")]) {
      const path = relative(".", file)
      if (NODE_ALLOWED.some((allowed) => path === allowed || path.startsWith(allowed))) continue
      const text = readFileSync(file, "utf8")
      for (const [, spec] of text.matchAll(/(?:from|import)\s*\(?\s*["']([^"']+)["']/g)) {
        const builtin = spec!.startsWith("node:") ||
          ["fs", "path", "http", "https", "os", "child_process", "crypto", "net", "stream", "url"].includes(spec!)
        if (builtin) offenders.push(`${path}: imports ${spec}`)
      }
      if (/\brequire\(|__dirname|__filename/.test(text)) offenders.push(`${path}: uses require/__dirname`)
    }
    expect(offenders).toEqual([])
  })

  it("the check itself sees the runtime layer's node imports", () => {
    expect(readFileSync("src/runtime/node/NodeServer.ts", "utf8")).toMatch(/from "node:http"/)
  })
})
