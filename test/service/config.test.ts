// Runs once: no database (left out of the PostgreSQL pass, vitest.config.ts).
import { NodeContext } from "@effect/platform-node"
import { ConfigProvider, Effect, Exit, Option } from "effect"
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { environmentConfig, listenPort, loadSettings } from "../../src/platform/AppConfig.ts"

const copyConfig = (edit: (dir: string) => void) => {
  const dir = mkdtempSync(join(tmpdir(), "gw-config-"))
  cpSync("config", dir, { recursive: true })
  edit(dir)
  return dir
}

const editJson = (dir: string, file: string, f: (json: any) => void) => {
  const json = JSON.parse(readFileSync(join(dir, file), "utf8"))
  f(json)
  writeFileSync(join(dir, file), JSON.stringify(json))
}

const load = (dir: string) => Effect.runPromiseExit(loadSettings(dir).pipe(Effect.provide(NodeContext.layer)))

const failure = async (dir: string) => {
  const exit = await load(dir)
  if (Exit.isSuccess(exit)) throw new Error("expected the configuration to be refused")
  return String((exit.cause as any).error?.message ?? exit.cause)
}

describe("config/ files", () => {
  it("the shipped files are valid", async () => {
    const exit = await load("config")
    expect(Exit.isSuccess(exit)).toBe(true)
  })

  it("a wrong type names the file, the field and the problem", async () => {
    const dir = copyConfig((d) => editJson(d, "limits.json", (j) => (j.rate_limits.create.per_second = "fast")))
    const message = await failure(dir)
    expect(message).toContain(join(dir, "limits.json"))
    expect(message).toContain("rate_limits.create.per_second")
    expect(message).toMatch(/Expected number/)
  })

  it("an unknown field is refused rather than ignored", async () => {
    const dir = copyConfig((d) => editJson(d, "limits.json", (j) => (j.body.jsonBytes = 5)))
    expect(await failure(dir)).toMatch(/body\.jsonBytes/)
  })

  it("cross-field rules: the default group and aggregate members must exist", async () => {
    const missingDefault = copyConfig((d) => editJson(d, "groups.json", (j) => (j.default_group = "gold")))
    expect(await failure(missingDefault)).toMatch(/default_group.*"gold"/s)
    const badMember = copyConfig((d) => editJson(d, "groups.json", (j) => (j.groups.auto.members = ["vip", "nope"])))
    expect(await failure(badMember)).toMatch(/groups\.auto\.members.*"nope"/s)
  })

  it("invalid JSON and a missing file name the file", async () => {
    const broken = copyConfig((d) => writeFileSync(join(d, "groups.json"), "{ nope"))
    expect(await failure(broken)).toMatch(/groups\.json: not valid JSON/)
    const empty = mkdtempSync(join(tmpdir(), "gw-config-"))
    expect(await failure(empty)).toMatch(/limits\.json: cannot be read/)
  })

  it("engine timing: the heartbeat must come before the lease runs out", async () => {
    const dir = copyConfig((d) => editJson(d, "limits.json", (j) => (j.engine = { lease_s: 5, heartbeat_s: 5 })))
    expect(await failure(dir)).toMatch(/engine\.heartbeat_s.*shorter than lease_s/s)
  })
})

describe("environment", () => {
  const read = (env: Record<string, string>) =>
    Effect.runPromiseExit(
      Effect.withConfigProvider(environmentConfig, ConfigProvider.fromMap(new Map(Object.entries(env))))
    )

  it("S3_ENDPOINT without S3_BUCKET is refused instead of silently using the local store", async () => {
    const exit = await read({ S3_ENDPOINT: "http://127.0.0.1:9000" })
    expect(Exit.isFailure(exit)).toBe(true)
    expect(String(Exit.isFailure(exit) && exit.cause)).toMatch(/S3_BUCKET/)
    const withBucket = await read({ S3_ENDPOINT: "http://127.0.0.1:9000", S3_BUCKET: "media" })
    expect(Exit.isSuccess(withBucket)).toBe(true)
  })

  it("defaults of the environment variables (docs/operating.md)", async () => {
    const exit = await read({})
    expect(Exit.isSuccess(exit) && exit.value).toMatchObject({
      host: "127.0.0.1",
      port: 8080,
      dataDir: "./data",
      role: "all",
      publicBaseUrl: "http://127.0.0.1:8080"
    })
  })

  it("OPS_PORT: a worker's listener, unset by default; no other role listens on it", async () => {
    const unset = await read({ ROLE: "worker" })
    expect(Exit.isSuccess(unset) && Option.isNone(unset.value.opsPort)).toBe(true)
    const set = await read({ ROLE: "worker", OPS_PORT: "9090", PORT: "8081" })
    if (Exit.isFailure(set)) throw new Error("OPS_PORT=9090 was refused")
    expect(set.value.opsPort).toEqual(Option.some(9090))
    expect(listenPort(set.value)).toBe(9090)
    expect(listenPort({ ...set.value, role: "api" })).toBe(8081)
    expect(listenPort({ ...set.value, role: "all" })).toBe(8081)
    // Not a port: refused at start, like PORT.
    expect(Exit.isFailure(await read({ ROLE: "worker", OPS_PORT: "ninety" }))).toBe(true)
    expect(Exit.isFailure(await read({ ROLE: "worker", OPS_PORT: "70000" }))).toBe(true)
  })
})
