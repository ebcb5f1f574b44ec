import { createServer, type Server } from "node:http"
import { type FakeMinimax, startFakeMinimax } from "../fakes/minimax.ts"
import { alsoWith, configWith } from "./config.ts"
import { listenOnLoopback } from "./fakeServer.ts"
import { freePort, startGateway, type TestGateway } from "./gateway.ts"
import { besideFake, expectNoneOf, quickEngine, runBesideFake } from "./upstream.ts"

/**
 * A gateway whose famH models run on `minimax` channels pointing at the fake
 * MiniMax API (test/fakes/minimax.ts): the 768p model on `hailuo`
 * (MiniMax-Hailuo-02, first and last frame), the 1080p model on `hailuo23`
 * (MiniMax-Hailuo-2.3, which takes no last frame). For the channel check:
 * `hailuo-wrong` (another key), `hailuo-down` (a closed port) and
 * `hailuo-garbage` (a server answering an HTML page). The engine runs
 * in-process (ROLE=all). `options.callbacks` turns MiniMax's callbacks on
 * for every channel; `options.engine` overrides the quick engine's settings
 * (e.g. a slow `poll_interval_ms`).
 */

export const KEY = "eyJhbGciOiJSUzI1NiJ9.minimax-test-key-0123456789"
export const M768 = "provx-famH-02-768p"
export const M1080 = "provx-famH-02-1080p"

export interface MinimaxSetup {
  readonly fake: FakeMinimax
  readonly gw: TestGateway
  readonly closedPort: number
  readonly close: () => Promise<void>
}

export const startMinimaxGateway = async (
  options: { readonly callbacks?: boolean; readonly engine?: Record<string, unknown> } = {}
): Promise<MinimaxSetup> => {
  const fake = await startFakeMinimax(KEY)
  const closedPort = await freePort()
  const page: Server = createServer((_, res) =>
    res.writeHead(200, { "content-type": "text/html" }).end("<html><body>Welcome</body></html>")
  )
  const garbage = await listenOnLoopback(page)
  const config = configWith("models.json", (models) => {
    const common = {
      adapter: "minimax",
      base_url: fake.url,
      credentials: { api_key: { env: "MINIMAX_API_KEY" } },
      concurrency: 10,
      timeouts: { submit_s: 2, poll_s: 2, download_s: 30 },
      ...(options.callbacks === true ? { callbacks: true } : {})
    }
    models.channels.hailuo = common
    models.channels.hailuo23 = common
    models.channels["hailuo-wrong"] = { ...common, credentials: { api_key: { env: "MINIMAX_WRONG_KEY" } } }
    models.channels["hailuo-down"] = { ...common, base_url: `http://127.0.0.1:${closedPort}` }
    models.channels["hailuo-garbage"] = { ...common, base_url: `http://127.0.0.1:${garbage.port}` }
    models.models[M768].channels = [{ channel: "hailuo", upstream_model: "MiniMax-Hailuo-02" }]
    models.models[M1080].channels = [{ channel: "hailuo23", upstream_model: "MiniMax-Hailuo-2.3" }]
  })
  quickEngine(config)
  alsoWith(config, "limits.json", (limits) => Object.assign(limits.engine, options.engine ?? {}))
  const [gw] = await Promise.all([
    startGateway({
      ROLE: "all",
      CONFIG_DIR: config,
      MINIMAX_API_KEY: KEY,
      MINIMAX_WRONG_KEY: "eyJ-a-key-of-another-account-0123456789"
    }),
    // The videos the tests download, rendered while the gateway starts.
    fake.warmUp([["768P", 6], ["768P", 10], ["1080P", 6]])
  ])
  const both = besideFake(gw, fake)
  return {
    ...both,
    closedPort,
    close: async () => {
      await both.close()
      await garbage.close()
    }
  }
}

/** A valid famH request: silent (the family's only kind), 6 s unless said. */
export const hailuoTask = (
  model: string,
  prompt: string,
  input: Record<string, unknown> = {},
  output: Record<string, unknown> = {}
) => ({
  model,
  operation: "generation",
  input: { prompt, ...input },
  output: { duration: 6, ...output }
})

/** Creates a task and waits for its end: what the caller saw, and the upstream requests and creates it caused. */
export const runMinimax = (setup: MinimaxSetup, body: Record<string, unknown>) =>
  runBesideFake(setup, body, "minimax caller", (r) => r.method === "POST")

export { engineRow, expectChargedOnce, expectRefunded } from "./upstream.ts"

/** Nothing of MiniMax reaches the caller: its host, task and file ids, model names, codes, words, the channels. */
export const expectNothingUpstream = ({ fake, closedPort }: MinimaxSetup, task: unknown) =>
  expectNoneOf(task, [
    "minimax",
    "hailuo",
    KEY,
    new URL(fake.url).host,
    `:${closedPort}`,
    "base_resp",
    "status_msg",
    "file_id",
    "download_url",
    "rate limit",
    "sensitive",
    "invalid params",
    "openresty",
    ...[...fake.tasks.values()].flatMap((t) => [t.id, t.fileId])
  ], { ignoreCase: true })
