import type { VideoTaskRequest } from "../../src/client/Tasks.ts"
import { type FakeVideos, startFakeVideos } from "../fakes/openai-videos.ts"
import { configWith } from "./config.ts"
import { freePort, startGateway, type TestGateway } from "./gateway.ts"
import { besideFake, createAndWait, expectNoneOf, quickEngine } from "./upstream.ts"

/**
 * A gateway whose video models run on `openai-videos` channels pointing at
 * the fake OpenAI Videos API (test/fakes/openai-videos.ts), for the
 * channel's tests. `ovideos` is the fake under the upstream model `sora-2`;
 * `ovideos-short` the same with a 3 s deadline; `ovideos-down` a port that
 * refuses connections. The engine runs in-process (ROLE=all).
 */

export const KEY = "sk-upstream-videos-0123456789"
/** famV fast 720p: frame mode, 4/6/8 s, 16:9 and 9:16. */
export const FAST = "provx-famV-3.1-fast-720p"
/** famV standard 720p (it also has an `images` mode), on the channel with a 3 s deadline. */
export const SHORT = "provx-famV-3.1-standard-720p"
export const DOWN = "provx-famV-3.1-fast-1080p"

/** A valid request for `FAST` with `prompt`; `over`'s fields replace the defaults, its input and output are merged in. */
export const videoTask = (
  prompt: string,
  over: Omit<Partial<VideoTaskRequest>, "input" | "output"> & {
    readonly input?: Partial<VideoTaskRequest["input"]>
    readonly output?: Partial<NonNullable<VideoTaskRequest["output"]>>
  } = {}
): VideoTaskRequest => ({
  model: FAST,
  operation: "generation",
  ...over,
  input: { prompt, ...over.input },
  output: { duration: 4, ...over.output }
})

export interface VideosGateway {
  readonly gw: TestGateway
  readonly fake: FakeVideos
  /** The port of `ovideos-down`, which refuses connections. */
  readonly closedPort: number
  readonly close: () => Promise<void>
}

export const startVideosGateway = async (): Promise<VideosGateway> => {
  const fake = await startFakeVideos(KEY)
  const closedPort = await freePort()
  const config = configWith("models.json", (models) => {
    const channel = {
      adapter: "openai-videos",
      base_url: fake.url,
      credentials: { api_key: { env: "OPENAI_VIDEOS_KEY" } },
      concurrency: 10,
      timeouts: { submit_s: 3, poll_s: 2, download_s: 30 }
    }
    models.channels.ovideos = channel
    models.channels["ovideos-short"] = { ...channel, timeouts: { ...channel.timeouts, deadline_s: 3 } }
    models.channels["ovideos-down"] = { ...channel, base_url: `http://127.0.0.1:${closedPort}/v1` }
    models.models[FAST].channels = [{ channel: "ovideos", upstream_model: "sora-2" }]
    models.models[SHORT].channels = [{ channel: "ovideos-short", upstream_model: "sora-2" }]
    models.models[DOWN].channels = [{ channel: "ovideos-down", upstream_model: "sora-2" }]
  })
  quickEngine(config)
  const gw = await startGateway({ ROLE: "all", CONFIG_DIR: config, OPENAI_VIDEOS_KEY: KEY })
  return { ...besideFake(gw, fake), closedPort }
}

/** Creates a task, waits for its end; returns it with the upstream requests its prompt caused. */
export const runTask = async ({ fake, gw }: VideosGateway, body: ReturnType<typeof videoTask>) => {
  const { task } = await createAndWait(gw, body, { name: "videos" })
  const video = [...fake.videos.values()].find((v) => v.prompt === body.input.prompt)
  const creates = fake.requests.filter((r) => r.method === "POST" && r.fields.prompt === body.input.prompt)
  const polls = fake.requests.filter((r) => video !== undefined && r.path === `/v1/videos/${video.id}`)
  return { task, creates, polls, video }
}

export { expectRefunded } from "./upstream.ts"

/**
 * Nothing of the upstream reaches the caller: its ids and address, the
 * upstream model, the key, its words (the fake's error messages, its HTML
 * page), the channels' names.
 */
export const expectNothingUpstream = ({ fake, closedPort }: VideosGateway, task: unknown) => {
  const words = ["ovideos", "sora", ...fake.videos.keys(), KEY, "req_fake", new URL(fake.url).host, `:${closedPort}`]
  words.push("<html", "relay-7", "10.0.0.7", "safety", "flagged", "GPU", "Rate limit", "assets have expired")
  expectNoneOf(task, words)
}
