import { type FakeReplicate, startFakeReplicate } from "../fakes/replicate.ts"
import { alsoWith, configWith } from "./config.ts"
import { startGateway, type TestGateway } from "./gateway.ts"
import { besideFake, expectNoneOf, quickEngine, runBesideFake } from "./upstream.ts"

/**
 * A gateway whose models run on a `replicate` channel pointing at the fake
 * Replicate (test/fakes/replicate.ts), for the replicate channel's tests. The
 * channel is named `marketplace` and the routes carry Replicate's model
 * names, so a test can check none of it reaches a caller.
 */

export const REPLICATE_TOKEN = "r8_fake_0123456789abcdef"

export interface ReplicateSetup {
  readonly fake: FakeReplicate
  readonly gw: TestGateway
  readonly close: () => Promise<void>
}

export const startReplicateGateway = async (
  routes: Record<string, Array<unknown>>,
  channel: Record<string, unknown> = {},
  env: Record<string, string> = {},
  engine: Record<string, unknown> = {}
): Promise<ReplicateSetup> => {
  const fake = await startFakeReplicate([REPLICATE_TOKEN])
  const config = configWith("models.json", (models) => {
    models.channels.marketplace = {
      adapter: "replicate",
      base_url: fake.url,
      credentials: { api_token: { env: "REPLICATE_TOKEN" } },
      concurrency: 10,
      timeouts: { submit_s: 2, poll_s: 2 },
      ...channel
    }
    for (const [model, list] of Object.entries(routes)) models.models[model].channels = list
  })
  quickEngine(config)
  alsoWith(config, "limits.json", (limits) => Object.assign(limits.engine, engine))
  const gw = await startGateway({ ROLE: "all", CONFIG_DIR: config, REPLICATE_TOKEN, ...env })
  return besideFake(gw, fake)
}

/** Creates a task and waits for its end: every state the caller saw, and the predictions it created. */
export const runReplicate = (setup: ReplicateSetup, body: Record<string, unknown>) =>
  runBesideFake(setup, body, "replicate caller", (r) => r.method === "POST" && r.path.endsWith("/predictions"))

export { engineRow, expectRefunded } from "./upstream.ts"

/** Nothing of Replicate reaches the caller: the channel, its host, its models, token and words. */
export const expectNothingUpstream = (fake: FakeReplicate, task: unknown) =>
  expectNoneOf(
    task,
    [
      "marketplace",
      "replicate",
      "seedance",
      "kwaivgi",
      "google/",
      "nano-banana",
      REPLICATE_TOKEN,
      new URL(fake.url).host,
      "throttled"
    ],
    { ignoreCase: true }
  )
