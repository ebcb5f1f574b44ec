import { createServer } from "node:http"
import { type FakeOpenRouter, startFakeOpenRouter } from "../fakes/openrouter.ts"
import { alsoWith, configWith } from "./config.ts"
import { listenOnLoopback } from "./fakeServer.ts"
import { freePort, startGateway, type TestGateway } from "./gateway.ts"
import { besideFake, expectNoneOf, quickEngine, runBesideFake } from "./upstream.ts"

/**
 * A gateway whose video models run on an `openrouter` channel pointing at
 * the fake OpenRouter (test/fakes/openrouter.ts), for the openrouter
 * channel's tests. The channel is named `aggregator` and the routes carry
 * OpenRouter's model ids, so a test can check none of it reaches a caller;
 * `aggregator-down` points at a port that refuses connections and
 * `aggregator-wrong` holds a key the fake does not know and
 * `aggregator-garbage` points at a server answering every path with an HTML
 * page, as a proxy or a captive portal would (channel checks).
 */

export const OPENROUTER_KEY = "sk-or-v1-fake0123456789abcdef0123456789abcdef"

export interface OpenRouterSetup {
  readonly fake: FakeOpenRouter
  readonly gw: TestGateway
  readonly closedPort: number
  readonly close: () => Promise<void>
}

export const startOpenRouterGateway = async (
  routes: Record<string, Array<unknown>>,
  channel: Record<string, unknown> = {},
  engine: Record<string, unknown> = {},
  env: Record<string, string> = {}
): Promise<OpenRouterSetup> => {
  const fake = await startFakeOpenRouter(OPENROUTER_KEY)
  const closedPort = await freePort()
  const page = await listenOnLoopback(
    createServer((_, res) =>
      res.writeHead(200, { "content-type": "text/html" }).end("<html><body>Welcome</body></html>")
    )
  )
  const config = configWith("models.json", (models) => {
    const aggregator = {
      adapter: "openrouter",
      base_url: fake.url,
      credentials: { api_key: { env: "OPENROUTER_KEY" } },
      concurrency: 10,
      timeouts: { submit_s: 2, poll_s: 2 },
      ...channel
    }
    models.channels.aggregator = aggregator
    models.channels["aggregator-down"] = { ...aggregator, base_url: `http://127.0.0.1:${closedPort}/api/v1` }
    models.channels["aggregator-garbage"] = { ...aggregator, base_url: `http://127.0.0.1:${page.port}/api/v1` }
    models.channels["aggregator-wrong"] = { ...aggregator, credentials: { api_key: { env: "OPENROUTER_WRONG_KEY" } } }
    for (const [model, list] of Object.entries(routes)) models.models[model].channels = list
  })
  quickEngine(config)
  alsoWith(config, "limits.json", (limits) => Object.assign(limits.engine, engine))
  const gw = await startGateway({
    ROLE: "all",
    CONFIG_DIR: config,
    OPENROUTER_KEY,
    OPENROUTER_WRONG_KEY: "sk-or-v1-another-account-0123456789",
    ...env
  })
  const both = besideFake(gw, fake)
  return {
    ...both,
    closedPort,
    close: async () => {
      await both.close()
      await page.close()
    }
  }
}

/** Creates a task and waits for its end: every state the caller saw, and the jobs it created at OpenRouter. */
export const runOpenRouter = (setup: OpenRouterSetup, body: Record<string, unknown>) =>
  runBesideFake(setup, body, "openrouter caller", (r) => r.method === "POST" && r.path === "/api/v1/videos")

export { engineRow, expectChargedOnce, expectRefunded } from "./upstream.ts"

/** Nothing of OpenRouter reaches the caller: the channel, its host, its models, key, ids and words. */
export const expectNothingUpstream = (setup: OpenRouterSetup, task: unknown) =>
  expectNoneOf(
    task,
    [
      "aggregator",
      "openrouter",
      "kwaivgi",
      "kling-v3",
      "google/",
      "veo-3.1",
      "gen-vid-",
      OPENROUTER_KEY,
      new URL(setup.fake.url).host,
      `:${setup.closedPort}`,
      "cloudflare",
      "Rate limit exceeded",
      "User not found",
      "Provider error"
    ],
    { ignoreCase: true }
  )
