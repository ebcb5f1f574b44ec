import { type FakeArk, startFakeArk } from "../fakes/ark.ts"
import { configWith } from "./config.ts"
import { startGateway, type TestGateway } from "./gateway.ts"
import { besideFake, expectNoneOf, quickEngine, runBesideFake } from "./upstream.ts"

/**
 * A gateway whose famS models run on `ark` channels pointing at the fake
 * Ark (test/fakes/ark.ts), for the ark channel's tests. The channel is
 * named `byteplus` and the upstream models carry Ark's names, so a test can
 * check none of it reaches a caller.
 */

export const ARK_KEY = "ark-key-0123456789abcdef"
export const UPSTREAM = "dreamina-seedance-2-0-260128"

export interface ArkSetup {
  readonly fake: FakeArk
  readonly gw: TestGateway
  readonly close: () => Promise<void>
}

export const startArkGateway = async (
  routes: Record<string, Array<unknown>>,
  channels: Record<string, Record<string, unknown>> = {}
): Promise<ArkSetup> => {
  const fake = await startFakeArk([ARK_KEY])
  const config = configWith("models.json", (models) => {
    const ark = {
      adapter: "ark",
      base_url: fake.url,
      credentials: { api_key: { env: "ARK_KEY" } },
      concurrency: 10,
      timeouts: { submit_s: 2, poll_s: 2 }
    }
    models.channels.byteplus = ark
    for (const [name, over] of Object.entries(channels)) models.channels[name] = { ...ark, ...over }
    for (const [model, list] of Object.entries(routes)) models.models[model].channels = list
  })
  quickEngine(config)
  const gw = await startGateway({
    ROLE: "all",
    CONFIG_DIR: config,
    ARK_KEY,
    ARK_WRONG_KEY: "ark-key-of-another-region"
  })
  return besideFake(gw, fake)
}

/** Creates a video task and waits for its end: every state the caller saw, and the upstream requests it caused. */
export const runArk = (setup: ArkSetup, body: Record<string, unknown>) =>
  runBesideFake(setup, body, "ark caller", (r) => r.method === "POST")

export { engineRow, expectRefunded } from "./upstream.ts"

/** Nothing of Ark reaches the caller: the channel, its host, its task ids, models, codes and words. */
export const expectNothingUpstream = (fake: FakeArk, task: unknown) =>
  expectNoneOf(task, ["byteplus", "seedance", "cgt-", ARK_KEY, new URL(fake.url).host, "Sensitive", "Request id"], {
    ignoreCase: true
  })
