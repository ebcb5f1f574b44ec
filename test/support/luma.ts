import type { VideoTaskRequest } from "../../src/client/Tasks.ts"
import { type FakeLuma, startFakeLuma } from "../fakes/luma.ts"
import { configWith } from "./config.ts"
import { freePort, startGateway, type TestGateway } from "./gateway.ts"
import { besideFake, expectNoneOf, quickEngine, runBesideFake } from "./upstream.ts"

/**
 * A gateway whose video models of two families run on `luma` channels
 * pointing at the fake Dream Machine API (test/fakes/luma.ts):
 *
 * - `FAMS` (famS 720p) on `luma-dream` as Ray 2, `FAMS_HD` (famS 1080p) as
 *   Ray Flash 2, `FAMK` (famK 720p) as Ray Flash 2: Luma's 5 or 9 s, silent
 *   (the tests render no 1080p video: on a loaded machine it takes longer
 *   than a test may);
 * - `CALLED` (famS 2.0 fast 720p) on `luma-called`, the same fake with `"callbacks": true`;
 * - `DOWN` (famK omni 720p) on `luma-down`, a port that refuses connections.
 *
 * The channels carry Luma's names, so a test can check none of it reaches a caller.
 */

export const LUMA_KEY = "luma-0123456789abcdef-test-key"
export const FAMS = "provx-famS-720p"
export const FAMS_HD = "provx-famS-1080p"
export const FAMK = "provx-famK-3.0-720p"
export const CALLED = "provy-famS-2.0-fast-720p"
export const DOWN = "provx-famK-3.0-omni-720p"

export interface LumaSetup {
  readonly fake: FakeLuma
  readonly gw: TestGateway
  readonly closedPort: number
  readonly close: () => Promise<void>
}

/**
 * `channels`: more channels of the adapter, each `luma-dream`'s settings
 * with these on top (a wrong key, another base URL); `env` their variables.
 */
export const startLumaGateway = async (
  channels: Record<string, Record<string, unknown>> = {},
  env: Record<string, string> = {}
): Promise<LumaSetup> => {
  const fake = await startFakeLuma(LUMA_KEY)
  const closedPort = await freePort()
  const config = configWith("models.json", (models) => {
    const channel = {
      adapter: "luma",
      base_url: fake.url,
      credentials: { api_key: { env: "LUMAAI_API_KEY" } },
      concurrency: 10,
      timeouts: { submit_s: 2, poll_s: 2, download_s: 30 }
    }
    models.channels["luma-dream"] = channel
    models.channels["luma-called"] = { ...channel, callbacks: true }
    models.channels["luma-down"] = { ...channel, base_url: `http://127.0.0.1:${closedPort}/dream-machine/v1` }
    for (const [name, over] of Object.entries(channels)) models.channels[name] = { ...channel, ...over }
    models.models[FAMS].channels = [{ channel: "luma-dream", upstream_model: "ray-2" }]
    models.models[FAMS_HD].channels = [{ channel: "luma-dream", upstream_model: "ray-flash-2" }]
    models.models[FAMK].channels = [{ channel: "luma-dream", upstream_model: "ray-flash-2" }]
    models.models[CALLED].channels = [{ channel: "luma-called", upstream_model: "ray-2" }]
    models.models[DOWN].channels = [{ channel: "luma-down", upstream_model: "ray-2" }]
  })
  quickEngine(config)
  const gw = await startGateway({ ROLE: "all", CONFIG_DIR: config, LUMAAI_API_KEY: LUMA_KEY, ...env })
  return { ...besideFake(gw, fake), closedPort }
}

/** A valid silent video request: 5 s at 16:9 unless `output` says otherwise. */
export const lumaTask = (
  model: string,
  prompt: string,
  more: {
    readonly input?: Partial<VideoTaskRequest["input"]>
    readonly output?: Partial<NonNullable<VideoTaskRequest["output"]>>
  } = {}
): VideoTaskRequest => ({
  model,
  operation: "generation",
  input: { prompt, ...more.input },
  output: { duration: 5, aspect_ratio: "16:9", generate_audio: false, ...more.output }
})

/** Creates a task and waits for its end: every state the caller saw, and the creates it caused upstream. */
export const runLuma = (setup: LumaSetup, body: VideoTaskRequest | Record<string, unknown>) =>
  runBesideFake(
    setup,
    body as Record<string, unknown>,
    "luma caller",
    (r) => r.method === "POST" && r.path.includes("/generations")
  )

/** The generations the fake made for a prompt. */
export const generationsOf = (fake: FakeLuma, prompt: string) =>
  [...fake.generations.values()].filter((g) => g.request.prompt === prompt)

export { engineRow, expectChargedOnce, expectRefunded } from "./upstream.ts"

/** Nothing of Luma reaches the caller: the channels, its host and port, its ids, models, key and words. */
export const expectNothingUpstream = ({ fake, closedPort }: Pick<LumaSetup, "fake" | "closedPort">, task: unknown) =>
  expectNoneOf(task, [
    "luma",
    "ray-2",
    "ray-flash",
    "dream-machine",
    "dreaming",
    LUMA_KEY,
    new URL(fake.url).host,
    `:${closedPort}`,
    "detail",
    "failure_reason",
    "blacklisted",
    "moderation failed",
    "cloudflare",
    "Rate limit exceeded",
    ...fake.generations.keys()
  ], { ignoreCase: true })
