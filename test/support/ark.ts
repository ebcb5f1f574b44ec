import { expect } from "vitest"
import { type FakeArk, startFakeArk } from "../fakes/ark.ts"
import { alsoWith, configWith } from "./config.ts"
import { startGateway, type TestGateway } from "./gateway.ts"
import { call, createAccount } from "./http.ts"
import { ledgerOf, pollTask, query } from "./tasks.ts"

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
  alsoWith(config, "limits.json", (limits) => {
    limits.engine = { poll_interval_ms: 200, heartbeat_s: 1, lease_s: 10, retry_base_ms: 50, generate_retries: 2 }
    for (const rate of Object.values(limits.rate_limits) as Array<any>) rate.burst = rate.per_second = 10_000
  })
  const gw = await startGateway({
    ROLE: "all",
    CONFIG_DIR: config,
    ARK_KEY,
    ARK_WRONG_KEY: "ark-key-of-another-region"
  })
  return {
    fake,
    gw,
    close: async () => {
      await gw.close()
      await fake.close()
    }
  }
}

/** Creates a video task and waits for its end: every state the caller saw, and the upstream requests it caused. */
export const runArk = async ({ fake, gw }: ArkSetup, body: Record<string, unknown>) => {
  const acct = await createAccount(gw, { name: "ark caller", wallet_credits: 100 })
  const before = fake.requests.length
  const created = await call(gw, "POST", "/v1/video/tasks", { key: acct.model.key, json: body })
  expect(created.status).toBe(202)
  const seen = await pollTask(gw, acct.resource.key, created.body.id, undefined, { intervalMs: 50 })
  const creates = fake.requests.slice(before).filter((r) => r.method === "POST")
  return { acct, task: seen.at(-1), seen, creates }
}

/** The upstream id and channel the engine stored for a task. */
export const engineRow = async (gw: TestGateway, taskId: string) =>
  (await query<{ upstream_id: string | null; channel: string }>(
    gw,
    (sql) => sql`SELECT upstream_id, channel FROM tasks WHERE id = ${taskId}`
  ))[0]!

export const expectRefunded = async (gw: TestGateway, taskId: string) => {
  const ledger = await ledgerOf(gw, taskId)
  expect(ledger.map((l) => l.kind)).toEqual(["charge", "refund"])
  expect(ledger[0]!.wallet_micros + ledger[1]!.wallet_micros).toBe(0)
}

/** Nothing of Ark reaches the caller: the channel, its host, its task ids, models, codes and words. */
export const expectNothingUpstream = (fake: FakeArk, task: unknown) => {
  const text = JSON.stringify(task)
  for (
    const word of ["byteplus", "seedance", "cgt-", ARK_KEY, new URL(fake.url).host, "Sensitive", "Request id"]
  ) {
    expect(text.toLowerCase()).not.toContain(word.toLowerCase())
  }
}
