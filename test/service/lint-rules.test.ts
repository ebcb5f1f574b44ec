// Runs once: no database (left out of the PostgreSQL pass, vitest.config.ts).
import { cruise, type ICruiseResult } from "dependency-cruiser"
import extractDepcruiseConfig from "dependency-cruiser/config-utl/extract-depcruise-config"
import { ESLint } from "eslint"
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join, resolve } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"

/**
 * The architecture's rules (docs/architecture.md, "Arrows"), checked by
 * `npm run lint`, are themselves checked here: a violation of each is
 * planted and must be caught under its rule's name, and the same import
 * where it is allowed must pass. dependency-cruiser runs the repository's
 * own `.dependency-cruiser.cjs` on a scratch tree laid out like the
 * repository; ESLint lints text as if it were the named file.
 */

let tree: string
let ruleSet: Awaited<ReturnType<typeof extractDepcruiseConfig>>

beforeAll(async () => {
  tree = mkdtempSync(join(tmpdir(), "gw-lint-rules-"))
  ruleSet = await extractDepcruiseConfig(resolve(".dependency-cruiser.cjs"))
})
afterAll(() => rmSync(tree, { recursive: true, force: true }))

let n = 0
/**
 * Writes `files` (path → source) into a fresh scratch tree and cruises
 * them with the repository's rules; the violations as `rule: from → to`.
 */
const violationsOf = async (files: Record<string, string>) => {
  const root = join(tree, `case-${++n}`)
  mkdirSync(root)
  // Packages resolve as in the repository (pg is recognised by its resolved path).
  symlinkSync(resolve("node_modules"), join(root, "node_modules"))
  for (const [path, source] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true })
    writeFileSync(join(root, path), source)
  }
  const cwd = process.cwd()
  process.chdir(root)
  try {
    const { exclude: _exclude, tsConfig: _tsConfig, ...options } = ruleSet.options ?? {}
    const result = await cruise(Object.keys(files), {
      ...options,
      ruleSet: { forbidden: ruleSet.forbidden, allowed: ruleSet.allowed, allowedSeverity: ruleSet.allowedSeverity },
      validate: true
    })
    return (result.output as ICruiseResult).summary.violations.map((v) => `${v.rule.name}: ${v.from} → ${v.to}`)
  } finally {
    process.chdir(cwd)
  }
}

const leaf = "export const x = 1\n"
const importing = (...specs: ReadonlyArray<string>) =>
  specs.map((s, i) => `import { x as x${i} } from "${s}"\n`).join("")

describe("the import rules (dependency-cruiser)", () => {
  it("a file cycle, even through type-only imports", async () => {
    expect(
      await violationsOf({
        "src/billing/A.ts": `import type { b } from "./B.ts"\nexport const a: typeof b = 1\n`,
        "src/billing/B.ts": `import { a } from "./A.ts"\nexport const b = a\n`
      })
    ).toEqual(expect.arrayContaining(["no-cycle: src/billing/A.ts → src/billing/B.ts"]))
  })

  it("an adapter reaching past its contract; the contract and platform/ are fine", async () => {
    const found = await violationsOf({
      "channels/x/index.ts": importing(
        "../../src/catalog/Registry.ts",
        "../../src/channel/contract/Adapter.ts",
        "../../src/platform/Ids.ts",
        "./Mine.ts"
      ),
      "channels/x/Mine.ts": leaf,
      "src/catalog/Registry.ts": leaf,
      "src/channel/contract/Adapter.ts": leaf,
      "src/platform/Ids.ts": leaf
    })
    expect(found).toContain("adapters-see-their-contract: channels/x/index.ts → src/catalog/Registry.ts")
    expect(found.filter((v) => v.startsWith("adapters-see-their-contract"))).toHaveLength(1)
  })

  it("a plugin importing the adapter contract, or another plugin", async () => {
    const found = await violationsOf({
      "plugins/famX/index.ts": importing(
        "../../src/channel/contract/Adapter.ts",
        "../famY/index.ts",
        "../../src/catalog/contract/Capabilities.ts"
      ),
      "plugins/famY/index.ts": leaf,
      "src/channel/contract/Adapter.ts": leaf,
      "src/catalog/contract/Capabilities.ts": leaf
    })
    expect(found).toEqual(expect.arrayContaining([
      "plugins-see-their-contract: plugins/famX/index.ts → src/channel/contract/Adapter.ts",
      "plugins-see-their-contract: plugins/famX/index.ts → plugins/famY/index.ts"
    ]))
    expect(found.filter((v) => v.includes("Capabilities"))).toEqual([])
  })

  it("the core importing an adapter", async () => {
    expect(
      await violationsOf({
        "src/tasks/Plans.ts": importing("../../channels/sandbox/index.ts"),
        "channels/sandbox/index.ts": leaf
      })
    ).toContain("core-names-no-extension: src/tasks/Plans.ts → channels/sandbox/index.ts")
  })

  it("Node's modules and pg outside the runtime layer; inside it they are fine", async () => {
    const found = await violationsOf({
      "src/tasks/Files.ts": `import { readFileSync } from "node:fs"\nexport const r = readFileSync\n`,
      "src/platform/Db.ts": `import pg from "pg"\nexport const p = pg\n`,
      "src/runtime/node/Files.ts":
        `import { readFileSync } from "node:fs"\nimport pg from "pg"\nexport const r = [readFileSync, pg]\n`
    })
    expect(found.map((v) => v.replace(/ → .*node_modules\/pg\/.*$/, " → pg")).sort()).toEqual([
      "node-only-in-runtime: src/platform/Db.ts → pg",
      "node-only-in-runtime: src/tasks/Files.ts → fs"
    ])
  })

  it("the tasks feature reaching into the engine; the engine reading the tasks feature is fine", async () => {
    const found = await violationsOf({
      "src/tasks/TaskStore.ts": importing("./engine/TaskQueue.ts"),
      "src/tasks/engine/TaskQueue.ts": importing("../TaskRow.ts"),
      "src/tasks/TaskRow.ts": leaf
    })
    expect(found).toEqual(["tasks-not-into-engine: src/tasks/TaskStore.ts → src/tasks/engine/TaskQueue.ts"])
  })

  it("a service rendering HTTP errors or declaring the error contract; handlers and contracts may", async () => {
    const found = await violationsOf({
      "src/tasks/TaskStore.ts": importing("../platform/http/Errors.ts"),
      "src/tasks/Http.ts": importing("../platform/http/Errors.ts"),
      "src/uploads/Uploads.ts": importing("../platform/http/ErrorContract.ts"),
      "src/uploads/Api.ts": importing("../platform/http/ErrorContract.ts"),
      "src/platform/http/Errors.ts": leaf,
      "src/platform/http/ErrorContract.ts": leaf
    })
    expect(found.sort()).toEqual([
      "error-contract-in-contracts: src/uploads/Uploads.ts → src/platform/http/ErrorContract.ts",
      "http-errors-in-handlers: src/tasks/TaskStore.ts → src/platform/http/Errors.ts"
    ])
  })

  it("a feature importing against the layers: catalog → tasks, the adapter contract → the channel loader", async () => {
    const found = await violationsOf({
      "src/catalog/Registry.ts": importing("../tasks/TaskStore.ts", "../billing/Money.ts"),
      "src/channel/contract/Adapter.ts": importing("../Channels.ts"),
      "src/channel/Channels.ts": leaf,
      "src/tasks/TaskStore.ts": leaf,
      "src/billing/Money.ts": leaf
    })
    expect(found.sort()).toEqual([
      "not-in-allowed: src/catalog/Registry.ts → src/tasks/TaskStore.ts",
      "not-in-allowed: src/channel/contract/Adapter.ts → src/channel/Channels.ts"
    ])
  })
})

describe("the name rules (ESLint)", () => {
  const eslint = new ESLint()
  const messagesOf = async (filePath: string, code: string) =>
    (await eslint.lintText(code, { filePath: resolve(filePath) }))[0]!.messages.map((m) => m.ruleId)

  it("the HTTP server's modules in a service; in a handler they are fine", async () => {
    const code = `import { HttpServerRequest } from "@effect/platform"\nexport const r = HttpServerRequest\n`
    expect(await messagesOf("src/tasks/TaskStore.ts", code)).toEqual(["no-restricted-imports"])
    expect(await messagesOf("src/tasks/TasksHttp.ts", code)).toEqual([])
  })

  it("a service reading the request body; a handler may", async () => {
    const code = `import { readJson } from "../platform/http/Body.ts"\nexport const r = readJson\n`
    expect(await messagesOf("src/uploads/Uploads.ts", code)).toEqual(["no-restricted-imports"])
    expect(await messagesOf("src/uploads/Http.ts", code)).toEqual([])
  })

  it("a Node global in the core, not in the runtime layer, and not a name in prose or a property", async () => {
    expect(await messagesOf("src/tasks/Env.ts", `export const port = process.env.PORT\n`)).toEqual([
      "no-restricted-globals"
    ])
    expect(await messagesOf("channels/x/Bytes.ts", `export const b = Buffer.from("x")\n`)).toEqual([
      "no-restricted-globals"
    ])
    expect(await messagesOf("src/runtime/node/Env.ts", `export const port = process.env.PORT\n`)).toEqual([])
    const prose =
      "// process.env is read in runtime/node\nconst o = { process: 1 }\nexport const p = [o.process, `the process`]\n"
    expect(await messagesOf("src/tasks/Env.ts", prose)).toEqual([])
  })
})
