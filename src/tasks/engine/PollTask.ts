import { Clock, Data, Duration, Effect, Either } from "effect"
import { GenerationError } from "../../channel/contract/Generation.ts"
import type { AsyncRunner, UpstreamState } from "../../channel/contract/Upstream.ts"
import { AppConfig } from "../../platform/AppConfig.ts"
import { isPassing } from "../../storage/StorageError.ts"
import { internalFailureOf } from "../Kinds.ts"
import { decodeStoredRequest } from "../StoredRequest.ts"
import { type AttemptCost, type AttemptWork, costOf, outputsOf, presumedBilled } from "./AttemptCost.ts"
import { checkOutputs } from "./CheckOutputs.ts"
import { type DecodedClaim, parentSpan, toClaim } from "./Claim.ts"
import type { WaitingRow } from "./Claim.ts"
import { fetchResults } from "./FetchResults.ts"
import { planFor } from "./Plans.ts"
import { storeOutputs } from "./StoreOutputs.ts"
import { StaleClaim, TaskOutcomes } from "./TaskOutcomes.ts"
import { TaskQueue } from "./TaskQueue.ts"

/** Polls back off from the engine's poll interval up to this, so every waiting task is asked at least this often. */
export const MAX_POLL_GAP_MS = 30_000

/**
 * The delay before the next poll of a task polled `polls` times, up to
 * `capMs`; never sooner than an upstream's retry hint, nor than `floorMs`,
 * the gap a channel's request budget allows with this many tasks waiting
 * (Pacing.ts `budgetPollGapMs`), which may stretch past the cap.
 */
export const nextPollDelay = (
  intervalMs: number,
  polls: number,
  hintMs?: number,
  capMs = MAX_POLL_GAP_MS,
  floorMs = 0
) => Math.max(Math.min(intervalMs * 2 ** Math.min(polls, 10), capMs), hintMs ?? 0, floorMs)

/**
 * When a waiting task stops being waited for (ms): the channel's
 * `deadline_s` after its submit; for a result that exists but could not be
 * stored, not before the storage outage grace has run from the first such
 * failure (the upstream made it and was paid for it).
 */
export const deadlineOf = (
  row: Pick<WaitingRow, "submitted_at" | "store_since">,
  deadlineS: number,
  graceMs: number
) => Math.max(row.submitted_at + deadlineS * 1000, row.store_since === null ? 0 : row.store_since + graceMs)

/** What the poller tells pollTask besides the answer. */
export interface PollContext {
  readonly runner: AsyncRunner<unknown>
  readonly intervalMs: number
  /** When the poll was sent: the next one is counted from then, not from when its answer was handled. */
  readonly polledAt: number
  /** The longest delay to the next poll: the promised gap less the poller's own slack. */
  readonly capMs: number
  /** The shortest delay to the next poll: what the channel's request budget allows with the tasks waiting (0: none). */
  readonly floorMs: number
  /** Whether the answer differs from the last one this poller saw; an unchanged one is not written again. */
  readonly changed: boolean
  /**
   * Runs a finished task's downloads apart from the poll pass (a pass held by
   * downloads would delay every other task's poll); the task is held meanwhile.
   */
  readonly fetchApart: <R>(
    task: { readonly id: string; readonly attempt: number },
    fetch: Effect.Effect<void, never, R>
  ) => Effect.Effect<void, never, R>
}

export const pollTask = (row: WaitingRow, state: UpstreamState, context: PollContext) =>
  Effect.gen(function*() {
    const { capMs, changed, fetchApart, floorMs, intervalMs, polledAt, runner } = context
    const queue = yield* TaskQueue
    const outcomes = yield* TaskOutcomes
    const { limits } = yield* AppConfig
    const stored = toClaim(row)
    const attempt = { taskId: row.id, attempt: row.attempt, channel: row.channel, upstreamId: row.upstream_id }

    const decoded = decodeStoredRequest(stored.kind, stored.requestVersion, stored.request)
    if (Either.isLeft(decoded)) return yield* outcomes.fail(stored, internalFailureOf(stored.kind))
    const claim: DecodedClaim = { ...stored, ...decoded.right }
    const planned = yield* planFor(claim)
    if (!("run" in planned)) return yield* outcomes.fail(claim, planned)
    const plan = planned

    const now = yield* Clock.currentTimeMillis
    const graceMs = limits.storage.outage_grace_s * 1000
    const pastDeadline = now >= deadlineOf(row, plan.channel.timeouts.deadline_s, graceMs)
    // A callback that named the task meanwhile brings the next poll forward, never before the upstream's hint.
    // An upstream's retry hint counts from its answer (here by `now`), not from the request's sending.
    const again = (hintMs?: number, from = polledAt) =>
      queue.reschedule(
        claim,
        from + nextPollDelay(intervalMs, row.polls, hintMs, capMs, floorMs),
        hintMs === undefined ? from : Math.max(from, now) + hintMs,
        polledAt
      )
    // A task that ends frees a slot of the channel's `concurrency`: its workers are told at once.
    const freed = queue.notify(row.channel).pipe(Effect.ignore)
    const failWith = (error: GenerationError, outcome: string, cost: AttemptCost) =>
      queue.attempt({
        ...attempt,
        outcome,
        lastAnswer: state.answer ?? { code: error.code, message: error.message },
        upstream: error.upstream,
        cost: { ...cost, model: claim.model }
      })
        .pipe(
          Effect.zipRight(
            outcomes.fail(claim, { code: error.code, message: error.message, retryable: error.retryable })
          ),
          Effect.zipLeft(freed)
        )
    const expired = new GenerationError({ ...plan.internalFailure, retryable: true, transient: false })
    // What the provider charges for a finished task, by its own rules as the adapter read them (Upstream.ts):
    // a success counts as billed and a failure as not, where the adapter does not say.
    const finishedCost = (outputs?: AttemptWork["outputs"]) =>
      state._tag === "Succeeded" || state._tag === "Failed"
        ? costOf(plan.pricing, {
          billed: state.billed ?? state._tag === "Succeeded",
          usage: state.usage,
          outputs
        })
        : presumedBilled(plan.pricing)

    switch (state._tag) {
      case "Pending":
      case "Unknown": {
        if (state.answer !== undefined && changed) {
          yield* queue.attempt({ ...attempt, outcome: "waiting", lastAnswer: state.answer })
        }
        if (pastDeadline) {
          yield* Effect.logWarning("upstream task past its deadline; failing with refund").pipe(
            Effect.annotateLogs({ upstream_state: state._tag })
          )
          // Given up on, not stopped: the provider may still run and bill it.
          return yield* failWith(expired, "deadline", presumedBilled(plan.pricing))
        }
        if (state._tag === "Pending" && state.progress !== undefined && changed) {
          yield* queue.progress(claim, state.progress * 0.95)
        }
        return yield* again()
      }
      case "Failed":
        return yield* failWith(state.error, "failed", finishedCost())
      case "Succeeded": {
        // "Done but no output" (a filtered job) is a failure with a refund, never an empty success.
        if (state.results.length === 0) {
          return yield* failWith(
            new GenerationError({ ...plan.internalFailure, transient: false }),
            "no_output",
            finishedCost()
          )
        }
        // Downloads may take up to `download_s`: the task is held while they run (still `polling`, so a callback
        // does not move it), the hold renewed like a lease, so no other poller starts them again, and a process
        // that dies mid-download leaves the task due again within a hold, not after the longest download.
        const holdMs = plan.channel.timeouts.poll_s * 2 * 1000
        yield* queue.hold(claim, now + holdMs)
        const keepHeld = Clock.currentTimeMillis.pipe(
          Effect.flatMap((at) => queue.hold(claim, at + holdMs)),
          // A database blip must not end the download it guards; the next renewal tries again.
          Effect.catchAllDefect(() => Effect.void),
          Effect.delay(Duration.millis(holdMs / 2)),
          Effect.forever
        )
        const fetch = Effect.gen(function*() {
          const done = yield* fetchResults(claim.kind, plan, runner, state.results).pipe(
            Effect.flatMap((outputs) => checkOutputs(claim.kind, outputs, plan.internalFailure)),
            Effect.flatMap((outputs) =>
              storeOutputs(claim, plan, outputs).pipe(
                Effect.mapError((e) =>
                  isPassing(e)
                    ? new StoreAway({ reason: e.message })
                    // Refused for good (403, no such bucket, too large): waiting would not change that.
                    : new GenerationError({ ...plan.internalFailure, retryable: true, transient: false })
                )
              )
            ),
            // Its hold is renewed while it runs, so the whole of it is bounded too: a step that hangs
            // (a download past its own time-out, a store that never answers) ends as a try to repeat later.
            Effect.timeoutFail({
              duration: Duration.seconds((plan.channel.timeouts.download_s + plan.channel.timeouts.poll_s) * 2),
              onTimeout: () => new GenerationError({ ...plan.internalFailure, transient: true })
            }),
            // The downloaded files go with this scope, however the fetch ends; a retry downloads again.
            Effect.scoped,
            Effect.either
          )
          const after = yield* Clock.currentTimeMillis
          if (Either.isRight(done)) {
            yield* queue.attempt({
              ...attempt,
              outcome: "succeeded",
              lastAnswer: state.answer,
              cost: { ...finishedCost(outputsOf(done.right.map((s) => s.asset))), model: claim.model }
            })
            return yield* outcomes.succeed(claim, done.right.map((s) => s.asset), {
              [plan.resultKey]: done.right.map((s) => s.item)
            }).pipe(Effect.zipLeft(freed))
          }
          const failed = done.left
          if (failed._tag === "StoreAway") {
            // The result waits upstream (no spool: any replica can fetch it again, and the upstream keeps it
            // for hours or days) and is downloaded and stored again at the next poll.
            const since = yield* queue.storeFailed(claim)
            if (since === undefined) return yield* new StaleClaim({ taskId: claim.id, attempt: claim.attempt })
            const expiresAt = Math.min(...state.results.map((r) => r.expiresAt ?? Infinity))
            if (after - since < graceMs && after < expiresAt) {
              yield* Effect.logWarning("object storage is away; the result waits upstream and is fetched again").pipe(
                Effect.annotateLogs({ reason: failed.reason, waited_ms: after - since })
              )
              return yield* again(undefined, after)
            }
            yield* Effect.logError("object storage stayed away past the outage grace or the result's expiry").pipe(
              Effect.annotateLogs({ reason: failed.reason, waited_ms: after - since })
            )
            return yield* failWith(
              new GenerationError({ ...plan.internalFailure, retryable: true, transient: false }),
              "storage_unavailable",
              finishedCost()
            )
          }
          // A download that broke off or an unusable file: asked again later, until the deadline.
          if (failed.transient && !pastDeadline) {
            yield* Effect.logWarning("fetching an upstream result failed; trying again").pipe(
              Effect.annotateLogs({ reason: failed.message })
            )
            return yield* again(failed.retryAfterMs, after)
          }
          // `message` is not an own enumerable field of an Error, so a spread alone would leave it empty.
          const final = new GenerationError({ ...failed, message: failed.message, transient: false })
          return yield* failWith(final, "fetch_failed", finishedCost())
        })
        return yield* fetchApart(claim, guarded(row, "upstream.fetch_results", Effect.raceFirst(fetch, keepHeld)))
      }
    }
  }).pipe((poll) => guarded(row, "task.poll", poll, { "upstream.state": state._tag }))

/** Object storage is away or full while a finished result is stored: the task waits, it does not fail. */
class StoreAway extends Data.TaggedError("StoreAway")<{ readonly reason: string }> {}

/** What every part of a poll shares: a claim that ended elsewhere or a defect is logged, never raised. */
const guarded = <R>(
  row: WaitingRow,
  span: string,
  effect: Effect.Effect<unknown, StaleClaim, R>,
  attributes: Record<string, unknown> = {}
) =>
  effect.pipe(
    Effect.asVoid,
    Effect.catchTag("StaleClaim", () => Effect.logWarning("the task ended elsewhere; this poll's outcome was refused")),
    Effect.catchAllDefect((defect) => Effect.logError("polling a task died", defect)),
    Effect.annotateLogs({ task_id: row.id, attempt: row.attempt }),
    Effect.withSpan(span, {
      parent: parentSpan(toClaim(row)),
      attributes: { "task.id": row.id, "task.attempt": row.attempt, ...attributes }
    })
  )
