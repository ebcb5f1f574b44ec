import { Array, Cause, Chunk, Clock, Duration, Effect, Exit, FiberRef, Stream } from "effect"
import type { MetricsService } from "../platform/metrics/Metrics.ts"
import type { ChannelRunner, TaskKind } from "./contract/Adapter.ts"
import type { ChannelTimeouts } from "./contract/ChannelSettings.ts"
import { FailureCodes } from "./contract/FailureCodes.ts"
import { GenerationError } from "./contract/Generation.ts"
import { type AsyncRunner, isAsyncRunner, type UpstreamState } from "./contract/Upstream.ts"
import type { Operation } from "./Pacing.ts"
import type { ChannelBudget, Slot } from "./UpstreamBudget.ts"

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
 * Whether the upstream asked this channel to slow down: as the adapter says
 * where it knows (`throttled`), else a 429 or a Retry-After (Generation.ts).
 */
export const isThrottling = (error: GenerationError) =>
  error.throttled ?? (error.upstream?.status === 429 || error.retryAfterMs !== undefined)

/**
 * What the caller of a submit records right before it goes out, after its
 * slot in the budget (set around the submit with `Effect.locally`): the
 * engine's mark that the upstream may now hold the task. A submit still
 * waiting for its slot has sent nothing, so a process that stops then leaves
 * nothing in doubt. A mark that took so long that the request missed its slot
 * sends it at the next one (ChannelBudget `take`): a stop in that wait leaves
 * the task in doubt, found again by the next attempt as any ambiguous submit.
 */
export const beforeSubmit = FiberRef.unsafeMake<Effect.Effect<void>>(Effect.void)

/** What a channel's runner is wrapped with: its time-outs, and its request budget when it has one. */
export interface MeteredOptions {
  readonly timeouts: ChannelTimeouts
  readonly budget?: ChannelBudget | undefined
}

/**
 * A channel's runner whose upstream calls are paced, bounded, counted and
 * timed, in one place for every caller (the engine's submit, poller,
 * cancel; the channel check paces itself in Channels.ts):
 * - paced: with a request budget (docs/engine.md, The upstream request
 *   budget), each request waits for its slot in the channel's shared
 *   schedule, and a throttling answer lowers the channel's rate. A poll of
 *   more ids than one request asks about is split into requests of
 *   `pollBatch` ids (one id where the protocol has no batch query), each at
 *   its slot. Result downloads are not paced: they go to the provider's
 *   storage, not its API.
 * - bounded: the time-outs apply from the slot on, so a wait for the budget
 *   never turns into a time-out: a submit past `submit_s` (and 5 s of
 *   grace, for an adapter that does not apply it itself) is ambiguous; one
 *   poll request past `poll_s` is a failure to ask again later.
 * - counted and timed by channel and operation (`submit`, `poll`, `find`,
 *   `cancel`, `fetch_result`).
 * Generators that run in this process call no upstream and are left as
 * they are.
 */
export const meteredRunner = (
  channel: string,
  runner: ChannelRunner,
  metrics: MetricsService,
  { budget, timeouts }: MeteredOptions
): ChannelRunner => {
  const record = (operation: string, started: bigint, exit: Exit.Exit<unknown, GenerationError>) =>
    Effect.map(Clock.currentTimeNanos, (finished) => {
      const outcome = outcomeOf(exit)
      if (outcome !== undefined) {
        metrics.upstreamRequest(channel, operation, outcome, Number(finished - started) / 1e9)
      }
    })
  const timed = <A>(operation: string, call: Effect.Effect<A, GenerationError>) =>
    Effect.flatMap(Clock.currentTimeNanos, (started) => Effect.onExit(call, (exit) => record(operation, started, exit)))

  const wrap = <J>(kind: TaskKind, upstream: AsyncRunner<J>): AsyncRunner<J> => {
    const failureCode = kind === "video" ? FailureCodes.videoFailed : FailureCodes.imageFailed
    const notSent = (reason: string) =>
      new GenerationError({
        code: failureCode,
        message: `The upstream request could not be scheduled (${reason}).`,
        retryable: true,
        transient: true,
        notAccepted: true
      })
    const noAnswer = (ambiguous: boolean) =>
      new GenerationError({
        code: failureCode,
        message: "The upstream did not answer in time.",
        retryable: true,
        transient: true,
        ambiguous
      })

    /**
     * One request: `before` (for a submit, the caller's mark), at its slot when the channel has a budget (and
     * at the next one when the mark made it miss the first), then counted, timed and bounded.
     */
    const request = <A>(
      operation: Exclude<Operation, "check">,
      call: Effect.Effect<A, GenerationError>,
      bound?: { readonly seconds: number; readonly ambiguous: boolean },
      before: Effect.Effect<void> = Effect.void
    ) => {
      const limited = bound === undefined ? call : call.pipe(
        Effect.timeoutFail({ duration: Duration.seconds(bound.seconds), onTimeout: () => noAnswer(bound.ambiguous) })
      )
      if (budget === undefined) return Effect.zipRight(before, timed(operation, limited))
      const slowDown = (slot: Slot) => (error: GenerationError) =>
        isThrottling(error) ? budget.throttled(slot, error.retryAfterMs) : Effect.void
      return budget.take(operation, before).pipe(
        Effect.mapError((e) => notSent(e.reason)),
        Effect.flatMap((slot) => Effect.tapError(timed(operation, limited), slowDown(slot)))
      )
    }

    const pollBound = { seconds: timeouts.poll_s, ambiguous: false }
    const pollOne = (ids: ReadonlyArray<string>) => request("poll", upstream.poll(ids), pollBound)
    // The ids one request asks about: a batch query's, or one where each id is a request of its own.
    const perRequest = upstream.pollBatch ?? 1

    return {
      ...upstream,
      submit: (job) =>
        request(
          "submit",
          upstream.submit(job),
          { seconds: timeouts.submit_s + 5, ambiguous: true },
          Effect.flatten(FiberRef.get(beforeSubmit))
        ),
      poll: (ids) => {
        if (budget === undefined || ids.length <= perRequest) return pollOne(ids)
        // Each request at its own slot; what some answered is kept when others failed (the rest are Unknown, asked
        // again later), and only when none answered does the whole poll fail.
        const chunks = Chunk.toReadonlyArray(Chunk.chunksOf(Chunk.fromIterable(ids), perRequest))
        return Effect.forEach(chunks, (chunk) => Effect.either(pollOne(Chunk.toReadonlyArray(chunk))), {
          concurrency: "unbounded"
        }).pipe(
          Effect.flatMap((answers) => {
            const [failures, states] = Array.partitionMap(answers, (a) => a)
            if (states.length === 0 && failures.length > 0) return Effect.fail(failures[0]!)
            const merged = new Map<string, UpstreamState>()
            for (const part of states) for (const [id, state] of part) merged.set(id, state)
            return Effect.succeed(merged as ReadonlyMap<string, UpstreamState>)
          })
        )
      },
      fetchResult: (ref) =>
        Stream.unwrap(
          Effect.map(Clock.currentTimeNanos, (started) =>
            upstream.fetchResult(ref).pipe(Stream.ensuringWith((exit) =>
              record("fetch_result", started, exit)
            )))
        ),
      find: upstream.find === undefined ? undefined : (job) => request("find", upstream.find!(job)),
      cancel: upstream.cancel === undefined ? undefined : (id) => request("cancel", upstream.cancel!(id)),
      forget: upstream.forget === undefined ? undefined : (id) => request("delete", upstream.forget!(id)),
      // A reconciliation's read of the provider's records: counted and timed; an operator's rare call, which
      // pages through the provider's list inside one call, so it is not paced as one request.
      list: upstream.list === undefined ? undefined : (window) => timed("list", upstream.list!(window))
    }
  }
  return Object.fromEntries(
    Object.entries(runner).map(([kind, r]) => [kind, isAsyncRunner(r) ? wrap(kind as TaskKind, r) : r])
  ) as unknown as ChannelRunner
}
