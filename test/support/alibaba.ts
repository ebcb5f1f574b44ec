import { type FakeAlibaba, startFakeAlibaba } from "../fakes/alibaba.ts"
import { configWith } from "./config.ts"
import { freePort, startGateway, type TestGateway } from "./gateway.ts"
import { besideFake, expectNoneOf, quickEngine, runBesideFake } from "./upstream.ts"

/**
 * A gateway whose famW models run on `alibaba` channels pointing at the fake
 * DashScope (test/fakes/alibaba.ts): `dashscope` with the right key, and for
 * the channel check `dashscope-wrong` (another account's key) and
 * `dashscope-down` (a port that refuses connections). The engine runs
 * in-process (ROLE=all).
 */

export const KEY = "sk-dashscope-0123456789abcdef"
export const WRONG_KEY = "sk-dashscope-of-another-account"
export const FAMW_480 = "provy-famW-2.5-480p"
export const FAMW_720 = "provy-famW-2.5-720p"
export const FAMW_1080 = "provy-famW-2.5-1080p"

export interface AlibabaSetup {
  readonly fake: FakeAlibaba
  readonly gw: TestGateway
  readonly closedPort: number
  readonly close: () => Promise<void>
}

/** `routes`: each model's channels (the models left out keep the config's sandbox). */
export const startAlibabaGateway = async (
  routes: Record<string, Array<unknown>>,
  channels: Record<string, Record<string, unknown>> = {}
): Promise<AlibabaSetup> => {
  const fake = await startFakeAlibaba(KEY)
  const closedPort = await freePort()
  const config = configWith("models.json", (models) => {
    const common = {
      adapter: "alibaba",
      base_url: fake.url,
      credentials: { api_key: { env: "DASHSCOPE_API_KEY" } },
      concurrency: 10,
      timeouts: { submit_s: 2, poll_s: 2, download_s: 30 }
    }
    models.channels.dashscope = common
    models.channels["dashscope-wrong"] = { ...common, credentials: { api_key: { env: "DASHSCOPE_WRONG_KEY" } } }
    models.channels["dashscope-down"] = { ...common, base_url: `http://127.0.0.1:${closedPort}` }
    for (const [name, over] of Object.entries(channels)) models.channels[name] = { ...common, ...over }
    for (const [model, list] of Object.entries(routes)) models.models[model].channels = list
  })
  quickEngine(config)
  const gw = await startGateway({
    ROLE: "all",
    CONFIG_DIR: config,
    DASHSCOPE_API_KEY: KEY,
    DASHSCOPE_WRONG_KEY: WRONG_KEY
  })
  return { ...besideFake(gw, fake), closedPort }
}

export const isCreate = (r: { readonly method: string; readonly path: string }) =>
  r.method === "POST" && r.path === "/api/v1/services/aigc/video-generation/video-synthesis"

/** Creates a video task and waits for its end: every state the caller saw, the upstream requests and creates it caused. */
export const runAlibaba = (setup: AlibabaSetup, body: Record<string, unknown>) =>
  runBesideFake(setup, body, "alibaba caller", isCreate)

/** A famW request: `model`, a prompt, 5 s; `over` merged in (its input and output too). */
export const famW = (
  model: string,
  prompt: string,
  over: { input?: Record<string, unknown>; output?: Record<string, unknown>; [k: string]: unknown } = {}
) => ({
  model,
  operation: "generation",
  ...over,
  input: { prompt, ...over.input },
  output: { duration: 5, ...over.output }
})

export { engineRow, expectChargedOnce, expectRefunded } from "./upstream.ts"

/** Nothing of DashScope reaches the caller: its host, key, task ids, models, codes and words. */
export const expectNothingUpstream = (setup: AlibabaSetup, task: unknown) =>
  expectNoneOf(task, [
    "dashscope",
    "wan2.",
    KEY,
    new URL(setup.fake.url).host,
    `:${setup.closedPort}`,
    "task_status",
    "InvalidParameter",
    "DataInspection",
    "Throttling",
    "inappropriate",
    "Tengine",
    "10.1.2.3",
    "/oss/",
    ...setup.fake.tasks.keys()
  ], { ignoreCase: true })
