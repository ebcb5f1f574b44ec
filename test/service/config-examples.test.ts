import { generateKeyPairSync } from "node:crypto"
import { readdirSync, readFileSync } from "node:fs"
import net from "node:net"
import { join, resolve } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createAccount } from "../support/adminApi.ts"
import { api } from "../support/api.ts"
import { backend } from "../support/database.ts"
import { startGateway } from "../support/gateway.ts"
import { replyOf } from "../support/opsApi.ts"

/**
 * Every directory of `config/examples/` is a complete configuration an
 * operator can start from (`CONFIG_DIR=config/examples/<name>`). Each is
 * booted here as the service boots (the API and the task engine, so every
 * channel's runner is made), with made-up secrets for the variables its
 * `models.json` names: the boot must reach `/healthz`, `/v1/models` must
 * list exactly the example's models at its prices, its README must name
 * every variable it needs, and nothing may connect anywhere but loopback
 * (the examples point at the providers' real hosts, which a boot must not
 * contact). The list of examples is read from the directory, and the last
 * test checks every one was booted, so a new example cannot escape.
 */

const EXAMPLES = resolve("config/examples")
const examples = readdirSync(EXAMPLES, { withFileTypes: true })
  .filter((entry) => entry.isDirectory())
  .map((entry) => entry.name)
  .sort()

/** The upstreams the examples must cover, at least: one per adapter variant, and failover. */
const REQUIRED = [
  "alibaba",
  "ark",
  "failover",
  "fal",
  "gateway",
  "kling-current",
  "kling-legacy",
  "luma",
  "minimax",
  "openai-images",
  "openai-videos",
  "openrouter",
  "replicate",
  "runway",
  "veo-gemini",
  "veo-vertex"
]

/** Every `{ "env": NAME }` secret of a models.json, with the key it stands for (`api_key`, `service_account_json`). */
const secretsOf = (json: unknown, key = ""): Array<{ name: string; key: string }> => {
  if (Array.isArray(json)) return json.flatMap((item) => secretsOf(item))
  if (typeof json !== "object" || json === null) return []
  const entries = Object.entries(json)
  if (entries.length === 1 && entries[0]![0] === "env" && typeof entries[0]![1] === "string") {
    return [{ name: entries[0]![1], key }]
  }
  return entries.flatMap(([k, v]) => secretsOf(v, k))
}

/** The variables a README's tables list: rows that start with a backticked upper-case name. */
const variablesIn = (readme: string) => new Set([...readme.matchAll(/^\|\s*`([A-Z_][A-Z0-9_]*)`/gm)].map((m) => m[1]!))

/** A service-account key file like Google's, its key really PKCS#8; `token_uri` left to Google's default. */
const serviceAccountJson = () => {
  const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 })
  return JSON.stringify({
    type: "service_account",
    project_id: "my-gcp-project",
    private_key: privateKey.export({ type: "pkcs8", format: "pem" }),
    client_email: "media-gateway@my-gcp-project.iam.gserviceaccount.com"
  })
}

/** A made-up value of the right shape for a secret. */
const dummy = (secret: { name: string; key: string }) =>
  secret.key === "service_account_json" ? serviceAccountJson() : `dummy-${secret.name.toLowerCase()}-0123456789`

/**
 * Every host a socket of this process is asked to connect to (TLS sockets
 * included: they connect through net.Socket too). Unix sockets are left out.
 */
const contacted: Array<string> = []
const originalConnect = net.Socket.prototype.connect
const isLoopback = (host: string) =>
  host === "localhost" || host === "::1" || host === "[::1]" || /^127\.\d+\.\d+\.\d+$/.test(host)

beforeAll(() => {
  net.Socket.prototype.connect = function(this: net.Socket, ...args: Array<any>) {
    // net.connect passes [options, callback] as one array; socket.connect(options) or (port, host) otherwise.
    const first = Array.isArray(args[0]) ? args[0][0] : args[0]
    if (typeof first === "object" && first !== null) {
      if (first.path === undefined) contacted.push(String(first.host ?? "localhost"))
    } else if (typeof first === "number" || typeof first === "string") {
      if (typeof args[1] === "string" || args[1] === undefined) contacted.push(String(args[1] ?? "localhost"))
    }
    return (originalConnect as (...a: Array<any>) => net.Socket).apply(this, args)
  } as typeof net.Socket.prototype.connect
})
afterAll(() => {
  net.Socket.prototype.connect = originalConnect
})

const booted = new Set<string>()

describe(`config/examples (${backend})`, () => {
  it("the connection recorder sees a socket to a non-loopback host (checked without any traffic)", async () => {
    const before = contacted.length
    await new Promise<void>((done) => {
      const socket = new net.Socket()
      socket.once("error", () => done())
      // The lookup fails at once, so nothing leaves the machine; the connect was still asked for.
      socket.connect({ host: "upstream.invalid", port: 443, lookup: (_h, _o, cb) => cb(new Error("not here"), "", 4) })
    })
    expect(contacted.slice(before)).toEqual(["upstream.invalid"])
    contacted.length = before
  })

  it("holds one example per upstream", () => {
    expect(examples).toEqual(expect.arrayContaining(REQUIRED))
  })

  it.each(examples)("%s boots with its secrets, lists its models and contacts no upstream", async (name) => {
    const dir = join(EXAMPLES, name)
    const models = JSON.parse(readFileSync(join(dir, "models.json"), "utf8"))
    const readme = readFileSync(join(dir, "README.md"), "utf8")
    const secrets = secretsOf(models)

    // The README names every variable the configuration reads.
    const listed = variablesIn(readme)
    expect(secrets.map((s) => s.name).filter((n) => !listed.has(n))).toEqual([])

    const from = contacted.length
    const gw = await startGateway({
      ROLE: "all",
      CONFIG_DIR: dir,
      ...Object.fromEntries(secrets.map((s) => [s.name, dummy(s)]))
    })
    try {
      const health = await replyOf(api(gw, {}).client((c) => c.resource.ops.healthz({ withResponse: true })))
      expect(health.status).toBe(200)
      expect(health.body).toEqual({ status: "ok" })

      const { model } = await createAccount(gw)
      const listing = await replyOf(
        api(gw, { model: model.key }).client((c) => c.model.models.listModels({ withResponse: true }))
      )
      expect(listing.status).toBe(200)
      const served = new Map<string, number>(listing.body.data.map((m) => [m.id, m.pricing.price]))
      const configured = Object.entries(models.models as Record<string, any>)
        .filter(([, m]) => m.enabled !== false)
        .map(([id, m]) => [id, m.price_per_second ?? m.price_per_image] as const)
      expect(configured.length).toBeGreaterThan(0)
      expect([...served.keys()].sort()).toEqual(configured.map(([id]) => id).sort())
      for (const [id, price] of configured) expect(served.get(id)).toBe(price)
    } finally {
      await gw.close()
    }
    // The API, the engine and every channel's runner were up: only loopback was asked for (this
    // test's own requests to the gateway among it, so the recorder saw the boot's sockets).
    const hosts = contacted.slice(from)
    expect(hosts.filter((host) => !isLoopback(host))).toEqual([])
    expect(hosts).toContain("127.0.0.1")
    booted.add(name)
  }, 90_000)

  it("booted every directory of config/examples", () => {
    expect([...booted].sort()).toEqual(examples)
  })
})
