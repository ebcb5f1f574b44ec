import { Clock, Duration, Effect, Either, Schedule, Schema } from "effect"
import { AppConfig } from "../../platform/AppConfig.ts"
import { isPassing } from "../../storage/StorageError.ts"
import { internalFailureOf } from "../Kinds.ts"
import { decodeStoredRequest } from "../StoredRequest.ts"
import { type DecodedClaim, parentSpan, toClaim } from "./Claim.ts"
import type { StoringRow } from "./Claim.ts"
import { planFor } from "./Plans.ts"
import { ResultSpool, SpoolRecord } from "./ResultSpool.ts"
import { storeOutputs } from "./StoreOutputs.ts"
import { TaskOutcomes } from "./TaskOutcomes.ts"
import { TaskQueue } from "./TaskQueue.ts"

/** Tries of a waiting result are at least this far apart, and at most this far once the wait is long. */
const MIN_STORE_GAP_MS = 1_000
const MAX_STORE_GAP_MS = 30_000
/** Tasks taken per pass, and tried at once. */
const PASS_SIZE = 50
const CONCURRENCY = 4
/**
 * How long a pass holds the tasks it took, renewed every third of it while
 * the pass runs (a try may take long: a large result's upload): a process
 * that dies mid-pass leaves them due again within this, not after the pass.
 */
export const STORE_HOLD_MS = 30_000
/** A spool folder no task records is removed once it is this old (a crash between writing and recording it). */
const ORPHAN_AGE_MS = 10 * 60_000

/**
 * The delay before the next try of a result that has waited `waitedMs` for
 * object storage: half the wait so far, from 1 s up to 30 s, so a blip is
 * ridden out at once and a long outage costs a try every half minute.
 */
export const nextStoreDelay = (waitedMs: number) =>
  Math.min(MAX_STORE_GAP_MS, Math.max(MIN_STORE_GAP_MS, Math.round(waitedMs / 2)))

/**
 * One try of a `storing` task: its spooled outputs are stored as they would
 * have been at once (same asset ids), then the task succeeds and the spool
 * folder goes. While the store is away or full it is tried again later;
 * a permanent refusal, a spool that lost the files, or the grace running out
 * fails the task with its refund.
 */
const tryStore = (row: StoringRow) =>
  Effect.gen(function*() {
    const queue = yield* TaskQueue
    const outcomes = yield* TaskOutcomes
    const spool = yield* ResultSpool
    const { limits } = yield* AppConfig
    const stored = toClaim(row)
    const now = yield* Clock.currentTimeMillis
    const waitedMs = now - row.store_since
    const mine = row.spool_id === spool.id
    // The files go first: a crash between the two leaves a task whose files are gone, which is given up again.
    const giveUp = (why: string) =>
      Effect.logError("a result waiting for object storage is given up; the task fails with its refund").pipe(
        Effect.annotateLogs({ reason: why, waited_ms: waitedMs }),
        Effect.zipRight(mine ? spool.remove(row.id) : Effect.void),
        Effect.zipRight(outcomes.fail(stored, { ...internalFailureOf(stored.kind), retryable: true }))
      )

    if (!mine) return yield* giveUp(`its spool (${row.spool_id}) is not on this host and the grace ran out`)
    const decoded = decodeStoredRequest(stored.kind, stored.requestVersion, stored.request)
    if (Either.isLeft(decoded)) return yield* giveUp("its stored request cannot be read")
    const claim: DecodedClaim = { ...stored, ...decoded.right }
    const plan = yield* planFor(claim)
    if (!("run" in plan)) return yield* giveUp("its model or channel is gone from the configuration")
    const record = Schema.decodeUnknownEither(SpoolRecord)(row.spool)
    if (Either.isLeft(record)) return yield* giveUp("its spool record cannot be read")
    const outputs = yield* Effect.either(spool.outputsOf(row.id, record.right))
    if (Either.isLeft(outputs)) return yield* giveUp(`its spooled files are gone: ${outputs.left.message}`)

    const result = yield* Effect.either(
      storeOutputs(claim, plan, outputs.right, record.right.outputs.map((o) => o.asset_id))
    )
    if (Either.isRight(result)) {
      yield* outcomes.succeed(claim, result.right.map((s) => s.asset), {
        [plan.resultKey]: result.right.map((s) => s.item)
      })
      yield* spool.remove(row.id)
      return yield* Effect.logInfo("a result that waited for object storage is stored").pipe(
        Effect.annotateLogs({ waited_ms: waitedMs })
      )
    }
    if (!isPassing(result.left)) return yield* giveUp(`object storage refused it: ${result.left.message}`)
    if (waitedMs >= limits.storage.outage_grace_s * 1000) {
      return yield* giveUp(`object storage stayed away past storage.outage_grace_s: ${result.left.message}`)
    }
    yield* Effect.logWarning("object storage is still away; the result waits in the spool").pipe(
      Effect.annotateLogs({ reason: result.left.message, waited_ms: waitedMs })
    )
    yield* queue.retryStoreAt(stored, now + nextStoreDelay(waitedMs))
  }).pipe(
    Effect.catchTag("StaleClaim", () =>
      // It ended elsewhere (its outcome was written by another try): its files are of no use now.
      Effect.zipRight(
        Effect.logWarning("the task ended elsewhere; this try's outcome was refused"),
        Effect.flatMap(ResultSpool, (spool) => row.spool_id === spool.id ? spool.remove(row.id) : Effect.void)
      )),
    Effect.catchAllDefect((defect) => Effect.logError("storing a waiting result died", defect)),
    Effect.annotateLogs({ task_id: row.id, attempt: row.attempt }),
    Effect.withSpan("task.store_retry", {
      parent: parentSpan(toClaim(row)),
      attributes: { "task.id": row.id, "task.attempt": row.attempt }
    })
  )

/**
 * Stores the results that wait in this process's spool for object storage
 * to come back (docs/engine.md), every second. Every worker process runs
 * one; processes sharing a DATA_DIR share its spool and split its tasks. At
 * start and every ten minutes, spool folders that no task records (a crash
 * between writing and recording them) are removed once they are old enough.
 */
export const storeRetrier = Effect.gen(function*() {
  const queue = yield* TaskQueue
  const spool = yield* ResultSpool
  const sweep = Effect.gen(function*() {
    const orphans = yield* spool.removeAllBut(
      yield* queue.spooled(spool.id),
      yield* Clock.currentTimeMillis,
      ORPHAN_AGE_MS
    )
    if (orphans > 0) {
      yield* Effect.logWarning("spool folders no task records were removed").pipe(
        Effect.annotateLogs({ folders: orphans })
      )
    }
  }).pipe(Effect.catchAllCause((cause) => Effect.logError("sweeping the spool failed", cause)))
  yield* sweep.pipe(Effect.repeat(Schedule.spaced(Duration.millis(ORPHAN_AGE_MS))), Effect.forkScoped)
  const pass = Effect.gen(function*() {
    const { heldUntil, rows } = yield* queue.claimStored(spool.id, PASS_SIZE, STORE_HOLD_MS)
    const ids = rows.map((r) => r.id)
    let held = heldUntil
    // Rows whose try has ended are no longer at `held` (rescheduled, or ended): the renewal passes them by.
    const keepHeld = Clock.currentTimeMillis.pipe(
      Effect.flatMap((now) => queue.holdStored(ids, held, now + STORE_HOLD_MS).pipe(Effect.as(now + STORE_HOLD_MS))),
      Effect.tap((until) => Effect.sync(() => held = until)),
      // A database blip must not end the pass it guards; the next renewal tries again.
      Effect.catchAllDefect(() => Effect.void),
      Effect.delay(Duration.millis(STORE_HOLD_MS / 3)),
      Effect.forever
    )
    // An empty pass ends at once, before the first renewal is due.
    yield* Effect.raceFirst(Effect.forEach(rows, tryStore, { concurrency: CONCURRENCY, discard: true }), keepHeld)
    return rows.length === PASS_SIZE
  }).pipe(Effect.catchAllCause((cause) => Effect.as(Effect.logError("storing waiting results failed", cause), false)))
  yield* Effect.forever(
    Effect.flatMap(pass, (more) => more ? Effect.void : Effect.sleep(Duration.millis(MIN_STORE_GAP_MS)))
  )
})
