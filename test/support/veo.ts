import { type FakeVeo, startFakeVeo } from "../fakes/veo.ts"
import { makeServiceAccount } from "../fakes/veoAuth.ts"
import { configWith } from "./config.ts"
import { startGateway, type TestGateway } from "./gateway.ts"
import { besideFake, expectNoneOf, quickEngine, runBesideFake } from "./upstream.ts"

/**
 * A gateway whose famV models run on `veo` channels pointing at the fake
 * Veo (test/fakes/veo.ts): `gemini` (the Gemini API, key in GEMINI_KEY) and
 * `vertex` (Vertex AI, the service-account key file's JSON in VERTEX_SA,
 * its `token_uri` the fake's). The upstream models carry Google's names, so
 * a test can check none of it reaches a caller.
 */

export const GEMINI_KEY = "AIzaSyFakeGeminiKey0123456789abcdefgh"
export const GEMINI_MODEL = "veo-3.1-generate-preview"
export const VERTEX_MODEL = "veo-3.1-generate-001"
export const PROJECT = "test-project"

export interface VeoSetup {
  readonly fake: FakeVeo
  readonly gw: TestGateway
  readonly close: () => Promise<void>
}

export const startVeoGateway = async (
  routes: Record<string, Array<unknown>>,
  channels: Record<string, Record<string, unknown>> = {}
): Promise<VeoSetup> => {
  const fake = await startFakeVeo([GEMINI_KEY], { project: PROJECT })
  const timeouts = { submit_s: 2, poll_s: 2 }
  const config = configWith("models.json", (models) => {
    models.channels.gemini = {
      adapter: "veo",
      api: "gemini",
      base_url: `${fake.url}/v1beta`,
      credentials: { api_key: { env: "GEMINI_KEY" } },
      concurrency: 10,
      timeouts
    }
    models.channels.vertex = {
      adapter: "veo",
      api: "vertex",
      base_url: `${fake.url}/v1`,
      project: PROJECT,
      location: "us-central1",
      credentials: { service_account_json: { env: "VERTEX_SA" } },
      concurrency: 10,
      // A finished operation carrying a 20 MB video inline is a 27 MB answer to every poll.
      timeouts: { ...timeouts, poll_s: 10 }
    }
    for (const [name, over] of Object.entries(channels)) {
      const [base, rest] = [over.like as string, { ...over }]
      delete rest.like
      models.channels[name] = { ...models.channels[base], ...rest }
    }
    for (const [model, list] of Object.entries(routes)) models.models[model].channels = list
  })
  quickEngine(config)
  const gw = await startGateway({
    ROLE: "all",
    CONFIG_DIR: config,
    GEMINI_KEY,
    GEMINI_WRONG_KEY: "AIzaSyKeyOfAnotherProject000000000000",
    VERTEX_SA: fake.account.json,
    // A well-formed key the fake's token endpoint does not trust (another account's).
    VERTEX_SA_UNTRUSTED: makeServiceAccount(`${fake.url}/token`, "intruder@other-project.iam.gserviceaccount.com").json
  })
  return besideFake(gw, fake)
}

/** Creates a video task and waits for its end: every state the caller saw, and the creates it caused upstream. */
export const runVeo = (setup: VeoSetup, body: Record<string, unknown>) =>
  runBesideFake(setup, body, "veo caller", (r) => r.path.endsWith(":predictLongRunning"))

export { engineRow, expectRefunded } from "./upstream.ts"

/** Nothing of Google reaches the caller: channels, hosts, operation names, models, projects, codes and words. */
export const expectNothingUpstream = (fake: FakeVeo, task: unknown) =>
  expectNoneOf(task, [
    "gemini",
    "vertex",
    "veo-3",
    "operations/",
    GEMINI_KEY,
    PROJECT,
    "4217",
    new URL(fake.url).host,
    "RESOURCE_EXHAUSTED",
    "INVALID_ARGUMENT",
    "googleapis",
    "ya29."
  ], { ignoreCase: true })
