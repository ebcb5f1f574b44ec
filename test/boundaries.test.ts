// Runs once: no database (left out of the PostgreSQL pass, vitest.config.ts).
import { readdirSync, readFileSync, statSync } from "node:fs"
import { basename, dirname, join, normalize, relative } from "node:path"
import { describe, expect, it } from "vitest"

/**
 * The arrows of docs/architecture.md (Arrows), checked on the source text:
 *
 * - Features raise their own errors; only `platform/http`, the handlers
 *   (`Http.ts`, `*Http.ts`) and, for the error schemas of the contract, the
 *   contract modules (`Api.ts`, `*Api.ts`, the auth middleware tags) import
 *   the HTTP error modules. A service that imports them is an arrow upward.
 * - Node-only code lives in `src/runtime/` (and the entry points): no
 *   `node:*` or `pg` import and no Node global elsewhere.
 *
 * `violations` is a plain function of a path and a text, so the checks are
 * themselves tested on planted violations below.
 */

const HTTP_ERROR_MODULES = ["src/platform/http/Errors.ts", "src/platform/http/HttpFailure.ts"]
const HTTP_ERROR_CONTRACT = "src/platform/http/ErrorContract.ts"

const isHandler = (path: string) => basename(path).endsWith("Http.ts")
const isContract = (path: string) => basename(path).endsWith("Api.ts") || path === "src/accounts/Security.ts"
const inHttpLayer = (path: string) => path.startsWith("src/platform/http/")

/** Node-only places: the runtime layer and the two entry points that compose it. */
const NODE_ALLOWED = ["src/runtime/", "src/main.ts", "src/cli/main.ts"]

/**
 * Known departures, each with why, to be removed in time: the list can only
 * shrink. A new entry needs a reason a reviewer accepts.
 */
const KNOWN: Readonly<Record<string, ReadonlyArray<string>>> = {
  // The command line's terminal output reads whether stdout/stderr are terminals.
  "src/cli/Progress.ts": ["uses the Node global process"],
  "src/cli/PlainConsole.ts": ["uses the Node global process"]
}

const BUILTINS = ["fs", "path", "http", "https", "os", "child_process", "crypto", "net", "stream", "url", "buffer"]
const NODE_GLOBALS = ["process", "Buffer", "__dirname", "__filename", "require"]

/** Source text without comments and string contents, so that prose and messages do not count as uses. */
const codeOnly = (text: string) =>
  text
    .replace(/\/\*[\s\S]*?\*\//g, "")
    .replace(/(^|[^:])\/\/.*$/gm, "$1")
    .replace(/`(?:\\.|[^`\\])*`/g, "``")

const importsOf = (text: string) => [...text.matchAll(/(?:from|import)\s*\(?\s*["']([^"']+)["']/g)].map((m) => m[1]!)

/** Where a relative import of `path` points, as a path from the repository root. */
const resolve = (path: string, spec: string) => spec.startsWith(".") ? normalize(join(dirname(path), spec)) : spec

export const violations = (path: string, text: string): Array<string> => {
  const found: Array<string> = []
  const imports = importsOf(text).map((spec) => ({ spec, target: resolve(path, spec) }))
  if (!inHttpLayer(path) && !isHandler(path)) {
    for (const { spec, target } of imports) {
      if (HTTP_ERROR_MODULES.includes(target)) found.push(`imports the HTTP error module ${spec}`)
      if (target === HTTP_ERROR_CONTRACT && !isContract(path)) found.push(`imports the HTTP error contract ${spec}`)
    }
  }
  if (!NODE_ALLOWED.some((allowed) => path === allowed || path.startsWith(allowed))) {
    for (const { spec } of imports) {
      if (spec.startsWith("node:") || BUILTINS.includes(spec)) found.push(`imports ${spec}`)
      if (spec === "pg" || spec.startsWith("pg/")) found.push("imports pg")
    }
    const code = codeOnly(text)
    for (const global of NODE_GLOBALS) {
      // A use, not a property or a declaration of the same name: `x.process` and `{ process: … }` are fine.
      const use = new RegExp(`(?<![.\\w$])${global}\\s*(?:[.(\\[]|$)`, "m")
      if (use.test(code)) found.push(`uses the Node global ${global}`)
    }
  }
  return [...new Set(found)]
}

const files = (dir: string): Array<string> =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    return statSync(path).isDirectory() ? files(path) : path.endsWith(".ts") ? [path] : []
  })

describe("module boundaries", () => {
  it("no service imports the HTTP error modules; no Node-only code outside the runtime layer", () => {
    const offenders: Array<string> = []
    for (const file of [...files("src"), ...files("plugins"), ...files("channels")]) {
      const path = relative(".", file)
      const known = KNOWN[path] ?? []
      for (const v of violations(path, readFileSync(file, "utf8"))) {
        if (!known.includes(v)) offenders.push(`${path}: ${v}`)
      }
    }
    expect(offenders).toEqual([])
  })

  it("the known departures are still there (an entry that no longer applies is removed)", () => {
    for (const [path, expected] of Object.entries(KNOWN)) {
      expect(violations(path, readFileSync(path, "utf8"))).toEqual(expect.arrayContaining([...expected]))
    }
  })

  it("sees a service importing the HTTP error module, and lets the HTTP layer and handlers do it", () => {
    const source = `import * as Errors from "../platform/http/Errors.ts"\n`
    expect(violations("src/tasks/TaskStore.ts", source)).toEqual([
      "imports the HTTP error module ../platform/http/Errors.ts"
    ])
    expect(violations("src/billing/Billing.ts", `import { HttpFailure } from "../platform/http/HttpFailure.ts"`))
      .toEqual(["imports the HTTP error module ../platform/http/HttpFailure.ts"])
    expect(violations("src/tasks/Http.ts", source)).toEqual([])
    expect(violations("src/tasks/ImagesHttp.ts", source)).toEqual([])
    expect(violations("src/platform/http/Middleware.ts", `import { answerOf } from "./Errors.ts"`)).toEqual([])
  })

  it("lets contracts, and only them, import the error contract", () => {
    const source = `import { errors } from "../platform/http/ErrorContract.ts"`
    expect(violations("src/uploads/Api.ts", source)).toEqual([])
    expect(violations("src/tasks/AssetsApi.ts", source)).toEqual([])
    expect(violations("src/uploads/Uploads.ts", source)).toEqual([
      "imports the HTTP error contract ../platform/http/ErrorContract.ts"
    ])
  })

  it("sees node:* and pg imports and Node globals outside the runtime layer, not inside it", () => {
    expect(violations("src/platform/X.ts", `import { readFile } from "node:fs/promises"`)).toEqual([
      "imports node:fs/promises"
    ])
    expect(violations("src/platform/X.ts", `import Pg from "pg"`)).toEqual(["imports pg"])
    expect(violations("src/tasks/X.ts", `const port = process.env.PORT`)).toEqual(["uses the Node global process"])
    expect(violations("src/tasks/X.ts", `const b = Buffer.from("x")`)).toEqual(["uses the Node global Buffer"])
    expect(violations("channels/x/X.ts", `const dir = __dirname`)).toEqual(["uses the Node global __dirname"])
    expect(violations("plugins/x/X.ts", `const m = require("m")`)).toContain("uses the Node global require")
    expect(violations("src/runtime/node/X.ts", `import Pg from "pg"\nconst p = process.env.X`)).toEqual([])
  })

  it("does not count names in prose, messages or properties as uses", () => {
    const source = [
      `// process.env is read in runtime/node`,
      `/** Buffer-free: Uint8Array only */`,
      "const text = `the process failed`",
      `const o = { process: 1 }`,
      `o.process`
    ].join("\n")
    expect(violations("src/tasks/X.ts", source)).toEqual([])
  })
})
