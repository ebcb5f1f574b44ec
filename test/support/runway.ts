import { createServer } from "node:http"
import { type FakeRunway, startFakeRunway } from "../fakes/runway.ts"
import { configWith } from "./config.ts"
import { listenOnLoopback } from "./fakeServer.ts"
import { freePort, startGateway, type TestGateway } from "./gateway.ts"
import { besideFake, expectNoneOf, runBesideFake } from "./upstream.ts"
import { quickEngine } from "./upstream.ts"

/**
 * A gateway whose famK and famV models run on `runway` channels pointing at
 * the fake Runway API (test/fakes/runway.ts), for the channel's tests:
 *
 * - `FAMK` (famK 3.0 720p): first `runway-turbo` to `gen4_turbo`, which needs
 *   a first frame (the adapter's limits say so), then `runway`
 *   to `gen4.5`, which takes text only too;
 * - `FAMK_FRAMED` (famK 3.0 omni 720p): `gen4_turbo` only, so a text-only
 *   create has no route;
 * - `FAMV` (famV 3.1 fast 720p) on `veo3.1_fast`, `FAMV_HD` (standard
 *   1080p) on `veo3.1`; `DOWN` (famV fast 1080p) on `runway-down`, a port
 *   that refuses connections; `runway-wrong` holds another key, and
 *   `runway-garbage` points at a server answering an HTML page (checks).
 *
 * The engine runs in-process (ROLE=all).
 */

export const KEY = "key_runway_fake_0123456789abcdef0123456789abcdef"
export const WRONG_KEY = "key_runway_other_account_000000000000000000000000"
export const FAMK = "provx-famK-3.0-720p"
export const FAMK_FRAMED = "provx-famK-3.0-omni-720p"
export const FAMV = "provx-famV-3.1-fast-720p"
export const FAMV_HD = "provx-famV-3.1-standard-1080p"
export const DOWN = "provx-famV-3.1-fast-1080p"

export interface RunwaySetup {
  readonly gw: TestGateway
  readonly fake: FakeRunway
  readonly closedPort: number
  readonly close: () => Promise<void>
}

export const startRunwayGateway = async (): Promise<RunwaySetup> => {
  const fake = await startFakeRunway(KEY)
  const closedPort = await freePort()
  // 200 with an HTML page on every path: a proxy's or a captive portal's answer.
  const page = await listenOnLoopback(
    createServer((_, res) =>
      res.writeHead(200, { "content-type": "text/html" }).end("<html><body>Welcome</body></html>")
    )
  )
  const config = configWith("models.json", (models) => {
    const channel = {
      adapter: "runway",
      base_url: fake.url,
      credentials: { api_key: { env: "RUNWAY_KEY" } },
      concurrency: 10,
      timeouts: { submit_s: 3, poll_s: 2, download_s: 30 }
    }
    models.channels.runway = channel
    models.channels["runway-turbo"] = channel
    models.channels["runway-down"] = { ...channel, base_url: `http://127.0.0.1:${closedPort}` }
    models.channels["runway-wrong"] = { ...channel, credentials: { api_key: { env: "RUNWAY_WRONG_KEY" } } }
    models.channels["runway-garbage"] = { ...channel, base_url: `http://127.0.0.1:${page.port}` }
    models.models[FAMK].channels = [
      { channel: "runway-turbo", upstream_model: "gen4_turbo" },
      { channel: "runway", upstream_model: "gen4.5" }
    ]
    models.models[FAMK_FRAMED].channels = [
      { channel: "runway-turbo", upstream_model: "gen4_turbo" }
    ]
    models.models[FAMV].channels = [{ channel: "runway", upstream_model: "veo3.1_fast" }]
    models.models[FAMV_HD].channels = [{ channel: "runway", upstream_model: "veo3.1" }]
    models.models[DOWN].channels = [{ channel: "runway-down", upstream_model: "veo3.1_fast" }]
  })
  quickEngine(config)
  const gw = await startGateway({
    ROLE: "all",
    CONFIG_DIR: config,
    RUNWAY_KEY: KEY,
    RUNWAY_WRONG_KEY: WRONG_KEY
  })
  const setup = besideFake(gw, fake)
  return {
    ...setup,
    closedPort,
    close: async () => {
      await setup.close()
      await page.close()
    }
  }
}

/** A video create body for `model`. */
export const video = (
  model: string,
  input: Record<string, unknown>,
  output: Record<string, unknown>,
  more: Record<string, unknown> = {}
) => ({ model, operation: "generation", input, output, ...more })

const isCreate = (r: { method: string; path: string }) =>
  r.method === "POST" && (r.path === "/v1/text_to_video" || r.path === "/v1/image_to_video")

/** Creates a task, waits for its end: every state the caller saw, the upstream requests it caused and its creates. */
export const runRunway = (setup: RunwaySetup, body: Record<string, unknown>) =>
  runBesideFake(setup, body, "runway caller", isCreate)

/** The upstream tasks made with this prompt (a create the fake took, whether or not its answer came back). */
export const tasksOf = ({ fake }: RunwaySetup, prompt: string) =>
  [...fake.tasks.values()].filter((t) => t.body.promptText === prompt)

/** The creates sent with this prompt, answered or not. */
export const createsOf = ({ fake }: RunwaySetup, prompt: string) =>
  fake.requests.filter((r) => isCreate(r) && r.body?.promptText === prompt)

export { engineRow, expectRefunded } from "./upstream.ts"

/**
 * Nothing of Runway reaches the caller: its task ids, address, models,
 * the key, its words (the fake's error texts, its HTML page, failure codes),
 * the channels' names.
 */
export const expectNothingUpstream = ({ closedPort, fake }: RunwaySetup, task: unknown) =>
  expectNoneOf(task, [
    "runway",
    "gen4",
    "veo3",
    KEY,
    new URL(fake.url).host,
    `:${closedPort}`,
    ...fake.tasks.keys(),
    "<html",
    "edge-runway-7",
    "10.0.0.7",
    "SAFETY",
    "INTERNAL",
    "rate limit",
    "X-Runway-Version"
  ], { ignoreCase: false })
