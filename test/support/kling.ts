import { type FakeKling, type KlingAccount, startFakeKling } from "../fakes/kling.ts"
import { configWith } from "./config.ts"
import { startGateway, type TestGateway } from "./gateway.ts"
import { besideFake, expectNoneOf, quickEngine, runBesideFake } from "./upstream.ts"

/**
 * A gateway whose famK models run on `kling` channels pointing at the fake
 * Kling (test/fakes/kling.ts): `klingai` speaks the current API (API key,
 * model in the path), `klingai-jwt` the legacy one (JWT, `model_name`).
 * Both carry Kling's names, so a test can check none of it reaches a caller.
 */

export const ACCOUNT: KlingAccount = {
  accessKey: "AK-kling-0123456789",
  secretKey: "SK-kling-secret-abcdefghijklmnop",
  apiKey: "kling-api-key-0123456789abcdef"
}

export interface KlingSetup {
  readonly fake: FakeKling
  readonly gw: TestGateway
  readonly close: () => Promise<void>
}

export const startKlingGateway = async (
  routes: Record<string, Array<unknown>>,
  channels: Record<string, Record<string, unknown>> = {}
): Promise<KlingSetup> => {
  const fake = await startFakeKling(ACCOUNT)
  const config = configWith("models.json", (models) => {
    const common = { adapter: "kling", base_url: fake.url, concurrency: 10, timeouts: { submit_s: 2, poll_s: 2 } }
    models.channels.klingai = { ...common, api: "current", credentials: { api_key: { env: "KLING_API_KEY" } } }
    models.channels["klingai-jwt"] = {
      ...common,
      api: "legacy",
      credentials: { access_key: { env: "KLING_AK" }, secret_key: { env: "KLING_SK" } }
    }
    for (const [name, over] of Object.entries(channels)) models.channels[name] = { ...common, ...over }
    for (const [model, list] of Object.entries(routes)) models.models[model].channels = list
  })
  quickEngine(config)
  const gw = await startGateway({
    ROLE: "all",
    CONFIG_DIR: config,
    KLING_API_KEY: ACCOUNT.apiKey,
    KLING_AK: ACCOUNT.accessKey,
    KLING_SK: ACCOUNT.secretKey,
    KLING_WRONG_SK: "SK-of-a-deleted-key"
  })
  return besideFake(gw, fake)
}

/** Creates a video task and waits for its end: every state the caller saw, and the upstream creates it caused. */
export const runKling = (setup: KlingSetup, body: Record<string, unknown>) =>
  runBesideFake(setup, body, "kling caller", (r) => r.method === "POST")

export { engineRow, expectRefunded } from "./upstream.ts"

/** Nothing of Kling reaches the caller: the channel, its host, its task ids, models, codes and words. */
export const expectNothingUpstream = (fake: FakeKling, task: unknown) =>
  expectNoneOf(task, [
    "kling",
    ACCOUNT.apiKey,
    ACCOUNT.accessKey,
    new URL(fake.url).host,
    "request_id",
    "task_status_msg",
    "content security",
    "resource pack",
    "succeed\"",
    ...fake.tasks.keys()
  ], { ignoreCase: true })
