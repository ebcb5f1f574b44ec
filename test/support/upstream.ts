import { Schema } from "effect"
import { expect } from "vitest"
import { VideoCreateRequest } from "../../src/catalog/VideoCreateRequest.ts"
import type { TaskOf } from "../../src/client/Tasks.ts"
import { ImageCreateRequest } from "../../src/tasks/Requests.ts"
import type { TaskKind } from "../../src/tasks/Task.ts"
import { createAccount } from "./adminApi.ts"
import { api } from "./api.ts"
import { alsoWith } from "./config.ts"
import type { TestGateway } from "./gateway.ts"
import { ledgerOf, query } from "./tasks.ts"

/**
 * What the tests of every upstream channel share: a gateway beside its fake
 * upstream, a task run through the public API to its end, and checks of what
 * the caller and the books show. Each adapter's support file (ark.ts,
 * kling.ts, veo.ts, openaiVideos.ts, fakeGateway.ts) adds its protocol's
 * part: which upstream requests a task caused, which upstream words must not
 * reach the caller.
 */

/** The gateway and its fake upstream, closed together. */
export const besideFake = <F extends { readonly close: () => Promise<unknown> }>(gw: TestGateway, fake: F) => ({
  gw,
  fake,
  close: async () => {
    await gw.close()
    await fake.close()
  }
})

/**
 * The limits of a gateway beside a fake upstream (in the config folder
 * `configDir`): an engine that polls every 200 ms and retries after 50 ms,
 * twice; rate limits out of the way.
 */
export const quickEngine = (configDir: string) =>
  alsoWith(configDir, "limits.json", (limits) => {
    limits.engine = { poll_interval_ms: 200, heartbeat_s: 1, lease_s: 10, retry_base_ms: 50, generate_retries: 2 }
    for (const rate of Object.values(limits.rate_limits) as Array<any>) rate.burst = rate.per_second = 10_000
  })

// A request checked against the contract, every field of it kept (an unknown field fails here, not silently dropped).
const strictly = { onExcessProperty: "error" } as const
const videoBody = Schema.decodeUnknownSync(VideoCreateRequest, strictly)
const imageBody = Schema.decodeUnknownSync(ImageCreateRequest, strictly)

/**
 * Creates a task with a new account's key through the typed client (the
 * body must be a valid request of its kind; the answer must be the 202) and
 * polls it to its end: the account and every state the caller saw.
 */
export const createAndWait = async <K extends TaskKind = "video">(
  gw: TestGateway,
  body: unknown,
  { intervalMs, kind = "video" as K, name = "caller" }: {
    readonly kind?: K
    readonly name?: string
    readonly intervalMs?: number
  } = {}
) => {
  const acct = await createAccount(gw, { name, wallet_credits: 100 })
  const caller = api(gw, acct)
  const created = kind === "image"
    ? await caller.createImage(imageBody(body))
    : await caller.createVideo(videoBody(body))
  const seen: Array<TaskOf<K>> = await caller.waitTask(kind, created.id, undefined, {
    deadlineMs: 90_000,
    ...(intervalMs === undefined ? {} : { intervalMs })
  })
  return { acct, task: seen.at(-1)!, seen }
}

/**
 * `createAndWait` beside a fake, every 50 ms: also the requests the task
 * caused upstream, and which of them were creates.
 */
export const runBesideFake = async <R>(
  { fake, gw }: { readonly fake: { readonly requests: ReadonlyArray<R> }; readonly gw: TestGateway },
  body: Record<string, unknown>,
  name: string,
  isCreate: (request: R) => boolean
) => {
  const before = fake.requests.length
  const run = await createAndWait(gw, body, { name, intervalMs: 50 })
  const requests = fake.requests.slice(before)
  return { ...run, creates: requests.filter(isCreate), requests }
}

/** The upstream id and channel the engine stored for a task (operators see them; callers never do). */
export const engineRow = async (gw: TestGateway, taskId: string) =>
  (await query<{ upstream_id: string | null; channel: string }>(
    gw,
    (sql) => sql`SELECT upstream_id, channel FROM tasks WHERE id = ${taskId}`
  ))[0]!

/** Charged once and refunded exactly that. */
export const expectRefunded = async (gw: TestGateway, taskId: string) => {
  const ledger = await ledgerOf(gw, taskId)
  expect(ledger.map((l) => l.kind)).toEqual(["charge", "refund"])
  expect(ledger[0]!.wallet_micros + ledger[1]!.wallet_micros).toBe(0)
}

/** Charged once and not refunded. */
export const expectChargedOnce = async (gw: TestGateway, taskId: string) =>
  expect((await ledgerOf(gw, taskId)).map((l) => l.kind)).toEqual(["charge"])

/** None of the upstream's words (ids, hosts, keys, messages, channel names) in what the caller sees. */
export const expectNoneOf = (
  seen: unknown,
  words: Iterable<string>,
  { ignoreCase = false }: { readonly ignoreCase?: boolean } = {}
) => {
  const text = ignoreCase ? JSON.stringify(seen).toLowerCase() : JSON.stringify(seen)
  for (const word of words) expect(text).not.toContain(ignoreCase ? word.toLowerCase() : word)
}

/**
 * A field deep in an upstream's own JSON (an attempt's `last_answer` in the
 * operator's task view, which the contract leaves `unknown`); undefined where
 * the path does not lead.
 */
export const fieldOf = (value: unknown, ...path: ReadonlyArray<string | number>): unknown => {
  let at = value
  for (const key of path) {
    if (typeof at !== "object" || at === null) return undefined
    at = (at as Record<string | number, unknown>)[key]
  }
  return at
}
