import { Cause, Clock, Effect, Exit, Stream } from "effect"
import type { MetricsService } from "../platform/metrics/Metrics.ts"
import type { ChannelRunner } from "./contract/Adapter.ts"
import type { GenerationError } from "./contract/Generation.ts"
import { type AsyncRunner, isAsyncRunner } from "./contract/Upstream.ts"

/**
 * How a call of an upstream ended, for `mtg_upstream_requests_total`: `ok`,
 * or the kind of GenerationError (docs/metrics.md): `refused` (the upstream
 * certainly did not take it), `ambiguous` (sent, fate unknown), `transient`
 * (tried again), `failed`; `error` for a defect in the adapter. An interrupted
 * call (shutdown, a time-out of the caller) is not counted.
 */
const outcomeOf = (exit: Exit.Exit<unknown, GenerationError>): string | undefined => {
  if (Exit.isSuccess(exit)) return "ok"
  if (Cause.isInterruptedOnly(exit.cause)) return undefined
  const failure = Cause.failureOption(exit.cause)
  if (failure._tag === "None") return "error"
  const error = failure.value
  return error.notAccepted ? "refused" : error.ambiguous ? "ambiguous" : error.transient ? "transient" : "failed"
}

/**
 * A channel's runner whose upstream calls (`submit`, `poll`, `find`, `cancel`,
 * `fetch_result`) are counted and timed by channel and operation. Generators
 * that run in this process call no upstream and are left as they are.
 */
export const meteredRunner = (channel: string, runner: ChannelRunner, metrics: MetricsService): ChannelRunner => {
  const record = (operation: string, started: bigint, exit: Exit.Exit<unknown, GenerationError>) =>
    Effect.map(Clock.currentTimeNanos, (finished) => {
      const outcome = outcomeOf(exit)
      if (outcome !== undefined) {
        metrics.upstreamRequest(channel, operation, outcome, Number(finished - started) / 1e9)
      }
    })
  const timed = <A>(operation: string, call: Effect.Effect<A, GenerationError>) =>
    Effect.flatMap(Clock.currentTimeNanos, (started) => Effect.onExit(call, (exit) => record(operation, started, exit)))
  const wrap = <J>(upstream: AsyncRunner<J>): AsyncRunner<J> => ({
    ...upstream,
    submit: (job) => timed("submit", upstream.submit(job)),
    poll: (ids) => timed("poll", upstream.poll(ids)),
    fetchResult: (ref) =>
      Stream.unwrap(
        Effect.map(Clock.currentTimeNanos, (started) =>
          upstream.fetchResult(ref).pipe(Stream.ensuringWith((exit) =>
            record("fetch_result", started, exit)
          )))
      ),
    find: upstream.find === undefined ? undefined : (job) => timed("find", upstream.find!(job)),
    cancel: upstream.cancel === undefined ? undefined : (id) => timed("cancel", upstream.cancel!(id))
  })
  return Object.fromEntries(
    Object.entries(runner).map(([kind, r]) => [kind, isAsyncRunner(r) ? wrap(r) : r])
  ) as unknown as ChannelRunner
}
