import { type ChildProcess, spawn } from "node:child_process"
import type { Scenario } from "../fakes/ark.ts"

/**
 * The fake Ark in a process of its own (test/fakes/arkProcess.ts), so the
 * arrival times it stamps are its own event loop's, not the test's.
 */

export interface ArkRequestSeen {
  /** When it arrived, on the fake's clock (ms since the epoch). */
  readonly at: number
  readonly method: string
  readonly path: string
}

export interface ArkSnapshot {
  /** Every API request (not result downloads), throttled ones included, in the order their bodies arrived. */
  readonly requests: ReadonlyArray<ArkRequestSeen>
  /** The requests answered 429 by `throttle`. */
  readonly throttled: ReadonlyArray<ArkRequestSeen>
  /** Every task created upstream, with its prompt. */
  readonly tasks: ReadonlyArray<{ readonly id: string; readonly prompt: string }>
}

export interface ArkProcess {
  /** The base URL a channel's `base_url` takes (`…/api/v3`). */
  readonly url: string
  /** The API requests of the next `ms` are answered 429, with `Retry-After` when given. */
  readonly throttle: (ms: number, retryAfter?: string) => Promise<void>
  readonly creates: () => Promise<number>
  /** How many API requests were answered 429 by `throttle`. */
  readonly throttledCount: () => Promise<number>
  readonly snapshot: () => Promise<ArkSnapshot>
  /** Tasks the fake holds as if created long ago with `key` (a benchmark's standing load). */
  readonly seed: (ids: ReadonlyArray<string>, key: string, scenario: Scenario, body: unknown) => Promise<number>
  /** When each API request arrived, on the fake's clock (lighter than a snapshot with many requests). */
  readonly requestTimes: () => Promise<ReadonlyArray<number>>
  readonly close: () => Promise<void>
}

export const startArkProcess = async (
  keys: ReadonlyArray<string>,
  scenarios: ReadonlyArray<{ readonly pattern: string; readonly scenario: Scenario }>
): Promise<ArkProcess> => {
  const child: ChildProcess = spawn(process.execPath, ["--import", "tsx", "test/fakes/arkProcess.ts"], {
    stdio: ["ignore", "inherit", "inherit", "ipc"],
    env: { ...process.env, FAKE_ARK_KEYS: JSON.stringify(keys), FAKE_ARK_SCENARIOS: JSON.stringify(scenarios) }
  })
  const pending = new Map<number, { resolve: (value: any) => void; reject: (e: Error) => void }>()
  let next = 0
  const url = await new Promise<string>((resolve, reject) => {
    child.once("exit", (code) => reject(new Error(`the fake Ark exited (${code}) before listening`)))
    child.on("message", (message: any) => {
      if (typeof message?.url === "string") return resolve(message.url)
      const waiting = pending.get(message.id)
      pending.delete(message.id)
      if (message.error !== undefined) waiting?.reject(new Error(message.error))
      else waiting?.resolve(message.result)
    })
  })
  const ask = <A>(op: string, ...args: Array<unknown>) =>
    new Promise<A>((resolve, reject) => {
      const id = next++
      pending.set(id, { resolve, reject })
      child.send({ id, op, args })
    })
  return {
    url,
    throttle: (ms, retryAfter) => ask("throttle", ms, retryAfter),
    creates: () => ask("creates"),
    throttledCount: () => ask("throttledCount"),
    snapshot: () => ask("snapshot"),
    seed: (ids, key, scenario, body) => ask("seed", ids, key, scenario, body),
    requestTimes: () => ask("requestTimes"),
    close: () =>
      new Promise<void>((done) => {
        if (child.exitCode !== null || child.signalCode !== null) return done()
        child.once("exit", () => done())
        child.disconnect()
      })
  }
}
