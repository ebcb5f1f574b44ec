import { type FakeFal, startFakeFal } from "../fakes/fal.ts"
import { alsoWith, configWith } from "./config.ts"
import { startGateway, type TestGateway } from "./gateway.ts"
import { besideFake, createAndWait, expectNoneOf, quickEngine, runBesideFake } from "./upstream.ts"

/**
 * A gateway whose routed models run on a `fal` channel (named `fal-market`)
 * pointing at the fake fal queue (test/fakes/fal.ts). The channel carries
 * fal's names, so a test can check none of it reaches a caller.
 */

export const FAL_KEY = "fal-key-id:fal-key-secret-0123456789"

export interface FalSetup {
  readonly fake: FakeFal
  readonly gw: TestGateway
  readonly close: () => Promise<void>
}

export const startFalGateway = async (
  routes: Record<string, Array<unknown>>,
  channel: Record<string, unknown> = {},
  env: Record<string, string> = {},
  /** Overrides of the quick engine's `limits.json` engine settings (e.g. a slow `poll_interval_ms`). */
  engine: Record<string, unknown> = {}
): Promise<FalSetup> => {
  const fake = await startFakeFal(FAL_KEY)
  const config = configWith("models.json", (models) => {
    models.channels["fal-market"] = {
      adapter: "fal",
      base_url: fake.url,
      credentials: { api_key: { env: "FAL_KEY" } },
      webhook_jwks_url: `${fake.url}/.well-known/jwks.json`,
      concurrency: 10,
      timeouts: { submit_s: 2, poll_s: 2 },
      ...channel
    }
    for (const [model, list] of Object.entries(routes)) models.models[model].channels = list
  })
  quickEngine(config)
  alsoWith(config, "limits.json", (limits) => Object.assign(limits.engine, engine))
  const gw = await startGateway({ ROLE: "all", CONFIG_DIR: config, FAL_KEY, ...env })
  return besideFake(gw, fake)
}

/** Creates a task and waits for its end: every state the caller saw, and the submits it caused upstream. */
export const runFal = (setup: FalSetup, body: Record<string, unknown>) =>
  runBesideFake(setup, body, "fal caller", (r) => r.method === "POST")

/** `runFal` for an image task. */
export const runFalImage = async (setup: FalSetup, body: Record<string, unknown>) => {
  const before = setup.fake.requests.length
  const run = await createAndWait(setup.gw, body, { kind: "image", name: "fal caller", intervalMs: 50 })
  const requests = setup.fake.requests.slice(before)
  return { ...run, creates: requests.filter((r) => r.method === "POST"), requests }
}

export { engineRow, expectChargedOnce, expectRefunded } from "./upstream.ts"

/** Nothing of fal reaches the caller: the channel, its host, request ids, endpoints and words. */
export const expectNothingUpstream = (fake: FakeFal, task: unknown) =>
  expectNoneOf(task, [
    "fal-market",
    "fal-ai",
    FAL_KEY,
    new URL(fake.url).host,
    "request_id",
    "detail",
    "validation_error",
    ...fake.queued.keys()
  ], { ignoreCase: true })
