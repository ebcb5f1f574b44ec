import { createServer, type Server } from "node:http"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startFakeArk } from "../fakes/ark.ts"
import { startFakeFal } from "../fakes/fal.ts"
import { startFakeGateway } from "../fakes/gateway.ts"
import { type KlingAccount, startFakeKling } from "../fakes/kling.ts"
import { startFakeImages } from "../fakes/openai-images.ts"
import { startFakeVideos } from "../fakes/openai-videos.ts"
import { startFakeReplicate } from "../fakes/replicate.ts"
import { startFakeVeo } from "../fakes/veo.ts"
import { makeServiceAccount } from "../fakes/veoAuth.ts"
import { adminApi } from "../support/adminApi.ts"
import { configWith } from "../support/config.ts"
import { backend } from "../support/database.ts"
import { listenOnLoopback } from "../support/fakeServer.ts"
import { freePort, startGateway, type TestGateway } from "../support/gateway.ts"
import { refused } from "../support/taskApi.ts"

/**
 * Every adapter's channel check (docs/adapters/*.md, Check) against its fake,
 * through `POST /admin/v1/channels/{name}/check`: the right credentials are
 * `ok`, a wrong key `credentials_refused`, a closed port `unreachable`, and a
 * server answering an HTML page where the provider answers JSON
 * `unexpected_answer`. Nothing is created upstream by any of them.
 */

const ARK_KEY = "ark-key-checks-0123456789"
const GEMINI_KEY = "AIzaSyCheckKey0123456789abcdefghijkl"
const OPENAI_KEY = "sk-upstream-checks"
const KLING: KlingAccount = {
  accessKey: "AK-check-0123",
  secretKey: "SK-check-secret-abcdefghij",
  apiKey: "kling-check-key"
}
const PEER = { modelToken: "sk-peer-checks-0123456789", resourceKey: "ak_peer_checks_0123456789" }

const closed: Array<() => Promise<void>> = []
let gw: TestGateway
let garbage: string
let nowhere: string
let creates: () => number

beforeAll(async () => {
  const [ark, veo, kling, peer, images, videos, replicate, fal] = await Promise.all([
    startFakeArk([ARK_KEY]),
    startFakeVeo([GEMINI_KEY]),
    startFakeKling(KLING),
    startFakeGateway(PEER),
    startFakeImages(OPENAI_KEY),
    startFakeVideos(OPENAI_KEY),
    startFakeReplicate([OPENAI_KEY]),
    startFakeFal(OPENAI_KEY)
  ])
  closed.push(ark.close, veo.close, kling.close, peer.close, images.close, videos.close, replicate.close, fal.close)
  // Creates upstream, of every fake (the Vertex token exchange is a POST too, and creates nothing).
  creates = () =>
    ark.requests.filter((r) => r.method === "POST").length +
    veo.requests.filter((r) => r.path.endsWith(":predictLongRunning")).length +
    kling.requests.filter((r) => r.method === "POST").length + images.requests.length +
    videos.requests.filter((r) => r.method === "POST").length + peer.requests.filter((r) =>
      r.method === "POST"
    ).length +
    fal.queued.size
  // 200 with an HTML page on every path: a proxy's or a captive portal's answer.
  const page: Server = createServer((_, res) =>
    res.writeHead(200, { "content-type": "text/html" }).end("<html><body>Welcome</body></html>")
  )
  garbage = `http://127.0.0.1:${(await listenOnLoopback(page)).port}`
  closed.push(() => new Promise((done) => page.close(() => done())))
  nowhere = `http://127.0.0.1:${await freePort()}`

  const timeouts = { submit_s: 2, poll_s: 2 }
  const variants = (
    name: string,
    base: Record<string, unknown>,
    wrong: Record<string, unknown>,
    path: string
  ) => ({
    [`${name}-ok`]: base,
    [`${name}-wrong`]: { ...base, ...wrong },
    [`${name}-down`]: { ...base, base_url: `${nowhere}${path}` },
    [`${name}-garbage`]: { ...base, base_url: `${garbage}${path}` }
  })
  const channels: Record<string, Record<string, unknown>> = {
    ...variants(
      "ark",
      { adapter: "ark", base_url: ark.url, credentials: { api_key: { env: "ARK_KEY" } }, timeouts },
      { credentials: { api_key: { env: "WRONG_KEY" } } },
      "/api/v3"
    ),
    ...variants(
      "gemini",
      {
        adapter: "veo",
        api: "gemini",
        base_url: `${veo.url}/v1beta`,
        credentials: { api_key: { env: "GEMINI_KEY" } },
        timeouts
      },
      { credentials: { api_key: { env: "WRONG_KEY" } } },
      "/v1beta"
    ),
    ...variants(
      "vertex",
      {
        adapter: "veo",
        api: "vertex",
        base_url: `${veo.url}/v1`,
        project: "test-project",
        location: "us-central1",
        credentials: { service_account_json: { env: "VERTEX_SA" } },
        timeouts
      },
      { credentials: { service_account_json: { env: "VERTEX_SA_UNTRUSTED" } } },
      "/v1"
    ),
    ...variants(
      "kling",
      {
        adapter: "kling",
        api: "current",
        base_url: kling.url,
        credentials: { api_key: { env: "KLING_KEY" } },
        timeouts
      },
      { credentials: { api_key: { env: "WRONG_KEY" } } },
      ""
    ),
    ...variants(
      "klingjwt",
      {
        adapter: "kling",
        api: "legacy",
        base_url: kling.url,
        credentials: { access_key: { env: "KLING_AK" }, secret_key: { env: "KLING_SK" } },
        timeouts
      },
      { credentials: { access_key: { env: "KLING_AK" }, secret_key: { env: "WRONG_KEY" } } },
      ""
    ),
    ...variants(
      "peer",
      {
        adapter: "gateway",
        base_url: peer.url,
        credentials: { model_token: { env: "PEER_SK" }, resource_key: { env: "PEER_AK" } },
        timeouts
      },
      { credentials: { model_token: { env: "WRONG_KEY" }, resource_key: { env: "PEER_AK" } } },
      ""
    ),
    ...variants(
      "oimages",
      { adapter: "openai-images", base_url: images.url, credentials: { api_key: { env: "OPENAI_KEY" } }, timeouts },
      { credentials: { api_key: { env: "WRONG_KEY" } } },
      "/v1"
    ),
    ...variants(
      "replicate",
      { adapter: "replicate", base_url: replicate.url, credentials: { api_token: { env: "OPENAI_KEY" } }, timeouts },
      { credentials: { api_token: { env: "WRONG_KEY" } } },
      "/v1"
    ),
    ...variants(
      "fal",
      { adapter: "fal", base_url: fal.url, credentials: { api_key: { env: "OPENAI_KEY" } }, timeouts },
      { credentials: { api_key: { env: "WRONG_KEY" } } },
      ""
    ),
    ...variants(
      "ovideos",
      { adapter: "openai-videos", base_url: videos.url, credentials: { api_key: { env: "OPENAI_KEY" } }, timeouts },
      { credentials: { api_key: { env: "WRONG_KEY" } } },
      "/v1"
    )
  }
  // The Vertex key whose token endpoint is down: the mint cannot reach Google.
  channels["vertex-down"] = {
    ...channels["vertex-ok"],
    credentials: { service_account_json: { env: "VERTEX_SA_DOWN" } }
  }
  const config = configWith("models.json", (models) => {
    for (const [name, channel] of Object.entries(channels)) models.channels[name] = channel
  })
  gw = await startGateway({
    CONFIG_DIR: config,
    ARK_KEY,
    GEMINI_KEY,
    OPENAI_KEY,
    KLING_KEY: KLING.apiKey,
    KLING_AK: KLING.accessKey,
    KLING_SK: KLING.secretKey,
    PEER_SK: PEER.modelToken,
    PEER_AK: PEER.resourceKey,
    WRONG_KEY: "a-key-of-another-account-0123456789",
    VERTEX_SA: veo.account.json,
    VERTEX_SA_UNTRUSTED: makeServiceAccount(`${veo.url}/token`, "intruder@other.iam.gserviceaccount.com").json,
    VERTEX_SA_DOWN: makeServiceAccount(`${nowhere}/token`).json
  })
}, 60_000)
afterAll(async () => {
  await gw?.close()
  await Promise.all(closed.map((close) => close()))
})

/** The operator's check of a channel; a 200 or it rejects (the typed admin client decodes the contract's answer). */
const check = (name: string) => adminApi(gw)((c) => c.adminChannels.checkChannel({ path: { name } }))

describe(`channel checks against the fakes (${backend})`, () => {
  const adapters = ["ark", "gemini", "vertex", "kling", "klingjwt", "peer", "oimages", "ovideos", "replicate", "fal"]
  it.each(adapters)("%s: ok, credentials_refused, unreachable, unexpected_answer", async (name) => {
    const before = creates()
    const expected = {
      ok: { ok: true, result: "ok" },
      wrong: { ok: false, result: "credentials_refused" },
      down: { ok: false, result: "unreachable" },
      garbage: { ok: false, result: "unexpected_answer" }
    }
    for (const [variant, answer] of Object.entries(expected)) {
      const reply = await check(`${name}-${variant}`)
      expect(reply, `${name}-${variant}: ${reply.detail}`).toMatchObject(answer)
      expect(reply.latency_ms).toBeGreaterThanOrEqual(0)
      expect(typeof reply.detail).toBe("string")
      // Never a secret in the words for the operator.
      expect(reply.detail).not.toMatch(/a-key-of-another-account|ark-key-checks|AIzaSyCheckKey|sk-upstream-checks/)
    }
    expect(creates()).toBe(before)
  })

  it("fal: ok is fal's 404 for the status of a request that cannot exist, read with the key", async () => {
    const reply = await check("fal-ok")
    expect(reply).toMatchObject({ ok: true, result: "ok" })
    expect(reply.detail).toMatch(/^GET \/[a-z0-9-]+\/[a-z0-9.-]+\/requests\/[0-9a-f-]{36}\/status: HTTP 404$/)
  })

  it("the sandbox has nothing to reach: ok; an unknown channel is 404 channel_not_found", async () => {
    expect(await check("sandbox")).toMatchObject({ ok: true, result: "ok" })
    await refused(check("no-such-channel"), 404, "channel_not_found")
  })
})
