import type { TaskKind } from "../../src/tasks/Task.ts"
import { type FakeGateway, startFakeGateway } from "../fakes/gateway.ts"
import { configWith } from "./config.ts"
import { startGateway, type TestGateway } from "./gateway.ts"
import { videoRequest } from "./tasks.ts"
import { besideFake, createAndWait, expectNoneOf, quickEngine } from "./upstream.ts"

/**
 * A gateway whose models run on `gateway` channels pointing at the fake
 * upstream gateway (test/fakes/gateway.ts), for the channel's fault tests.
 * `upgw` serves VIDEO and IMAGE; `upgw-short` serves SHORT with a 3 s
 * deadline, for the faults that only a deadline ends. The engine runs
 * in-process (ROLE=all).
 */

export const MODEL_TOKEN = "sk-upstream-gateway-0123456789"
export const RESOURCE_KEY = "ak_upstream-gateway-0123456789"
export const VIDEO = "provy-famS-2.0-480p"
export const SHORT = "provy-famS-2.0-720p"
export const IMAGE = "provx-image-1"

export interface FakeGatewayEnv {
  readonly gw: TestGateway
  readonly fake: FakeGateway
  readonly close: () => Promise<void>
}

/**
 * A config directory whose models run on `gateway` channels to `fake`: `upgw`
 * (VIDEO, IMAGE) with `timeouts`, and a second channel for SHORT, named
 * `secondName`, the same but for `secondTimeouts`.
 */
export const fakeGatewayConfig = (
  fake: FakeGateway,
  timeouts: Record<string, number>,
  second: { readonly name: string; readonly timeouts: Record<string, number> },
  settings: Record<string, unknown> = {}
) =>
  configWith("models.json", (models) => {
    const channel = {
      adapter: "gateway",
      base_url: fake.url,
      credentials: { model_token: { env: "UPGW_SK" }, resource_key: { env: "UPGW_AK" } },
      concurrency: 20,
      timeouts,
      ...settings
    }
    models.channels.upgw = channel
    models.channels[second.name] = { ...channel, timeouts: { ...timeouts, ...second.timeouts } }
    models.models[VIDEO].channels = [{ channel: "upgw", upstream_model: "upstream-video-model" }]
    models.models[SHORT].channels = [{ channel: second.name, upstream_model: "upstream-video-model" }]
    models.models[IMAGE].channels = [{ channel: "upgw", upstream_model: "upstream-image-model" }]
  })

/** `settings`: more settings of both channels (a request budget, for instance). */
export const startFakeGatewayEnv = async (
  env: Record<string, string> = {},
  settings: Record<string, unknown> = {}
): Promise<FakeGatewayEnv> => {
  const fake = await startFakeGateway({ modelToken: MODEL_TOKEN, resourceKey: RESOURCE_KEY })
  const config = fakeGatewayConfig(fake, { submit_s: 2, poll_s: 2, download_s: 30 }, {
    name: "upgw-short",
    timeouts: { deadline_s: 3 }
  }, settings)
  quickEngine(config)
  const gw = await startGateway({
    ROLE: "all",
    CONFIG_DIR: config,
    UPGW_SK: MODEL_TOKEN,
    UPGW_AK: RESOURCE_KEY,
    ...env
  })
  return besideFake(gw, fake)
}

/** A video task whose prompt names it, so its upstream task and requests can be found. */
export const videoTask = (prompt: string, model = VIDEO) =>
  videoRequest({ model, input: { prompt } }) as ReturnType<typeof videoRequest> & { input: { prompt: string } }

/** Creates a task, waits for its end; returns it with the upstream task and requests its prompt caused. */
export const runTask = async <K extends TaskKind = "video">(
  { fake, gw }: FakeGatewayEnv,
  body: { input: { prompt: string } },
  kind: K = "video" as K
) => {
  const { acct, task } = await createAndWait(gw, body, { kind })
  const prompt = body.input.prompt
  const upstream = [...fake.tasks.values()].filter((t) => t.prompt === prompt)
  const creates = fake.requests.filter((r) => r.path.endsWith("/tasks") && r.fields.input?.prompt === prompt)
  const polls = upstream.length === 1 ? fake.polls.get(upstream[0]!.id) ?? [] : []
  return { task, upstream, creates, polls, acct }
}

export { expectChargedOnce, expectRefunded } from "./upstream.ts"

/**
 * Nothing of the upstream reaches the caller: its task ids and address, the
 * upstream models, its keys and request ids, its HTML page, the channels' names.
 */
export const expectNothingUpstream = ({ fake }: FakeGatewayEnv, task: unknown) => {
  const words = [
    "upgw",
    "upstream-video-model",
    "upstream-image-model",
    ...fake.tasks.keys(),
    MODEL_TOKEN,
    RESOURCE_KEY
  ]
  words.push("req_fakegw", new URL(fake.url).host, "<html", "gw-node-3", "10.0.0.9", "Too many requests", "expired")
  expectNoneOf(task, words)
}
