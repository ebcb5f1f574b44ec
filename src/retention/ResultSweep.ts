import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer } from "effect"
import { AppConfig } from "../platform/AppConfig.ts"
import { Metrics } from "../platform/metrics/Metrics.ts"
import { nowSeconds } from "../platform/Time.ts"
import { ObjectStorage } from "../storage/ObjectStorage.ts"
import { removeObjectsOf } from "../storage/RemoveObjects.ts"
import { expiredResult } from "./ExpiredResult.ts"

/** A claim outlives a batch by far; only a sweeper that died holding rows lets it run out. */
const LEASE_S = 600

const DAY_S = 86_400

export interface SweptResults {
  readonly objects: number
  readonly bytes: number
}

/**
 * Removes result files past their group's `result_retention_days`
 * (docs/operating.md, Retention), from the local store and S3 alike. Safe
 * with any number of replicas, and after a crash: a batch claims assets with
 * one statement (`FOR UPDATE SKIP LOCKED`, then a lease), removes their
 * objects (one already gone counts as removed), then marks them `expired_at`
 * and rewrites their tasks' result items in one transaction, only for the
 * rows still under its lease. A sweeper that dies after removing leaves the
 * rows to the next one once the lease runs out, which removes nothing more
 * and marks them once: no row is counted or marked twice. The task keeps
 * everything else; its item says `expired: true` with the time.
 */
export class ResultSweep extends Context.Tag("ResultSweep")<ResultSweep, {
  /** One pass over every group with a retention: batches until one comes back short. */
  readonly sweep: Effect.Effect<SweptResults>
}>() {
  static readonly layer = Layer.effect(
    ResultSweep,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const storage = yield* ObjectStorage
      const metrics = yield* Metrics
      const { groups, limits } = yield* AppConfig
      const batch = limits.retention.sweep_batch
      const retained = Object.entries(groups.groups).flatMap(([group, settings]) =>
        settings.result_retention_days === undefined ? [] : [{ group, days: settings.result_retention_days }]
      )

      /** One batch of one group's assets made before `before`; how many were claimed, and what was swept. */
      const groupBatch = (group: string, before: number) =>
        Effect.gen(function*() {
          const now = yield* nowSeconds
          const lease = now + LEASE_S
          // Through the kept assets' (account, time) index, account by account of the group.
          const claimed = yield* sql<{ id: string; storage_key: string }>`
            UPDATE assets SET sweep_lease_until = ${lease}
            WHERE id IN (
              SELECT a.id FROM assets a
              WHERE a.account_id IN (SELECT id FROM accounts WHERE group_name = ${group})
                AND a.expired_at IS NULL AND a.deleted_at IS NULL AND a.created_at < ${before}
                AND (a.sweep_lease_until IS NULL OR a.sweep_lease_until < ${now})
              LIMIT ${batch}
              FOR UPDATE OF a SKIP LOCKED)
            RETURNING id, storage_key`
          if (claimed.length === 0) return { claimed: 0, objects: 0, bytes: 0 }
          const removed = yield* removeObjectsOf(storage, claimed, (row) => [row.storage_key], "an expired result")
          if (removed.length === 0) return { claimed: claimed.length, objects: 0, bytes: 0 }
          const marked = yield* sql.withTransaction(Effect.gen(function*() {
            // Only rows still under this batch's lease: one that ran out may be another sweeper's by now.
            const rows = yield* sql<{ id: string; task_id: string; size_bytes: string }>`
              UPDATE assets SET expired_at = ${now}
              WHERE ${sql.in("id", removed)} AND sweep_lease_until = ${lease} AND expired_at IS NULL
              RETURNING id, task_id, size_bytes::text`
            const byTask = new Map<string, Set<string>>()
            for (const row of rows) byTask.set(row.task_id, (byTask.get(row.task_id) ?? new Set()).add(row.id))
            if (byTask.size > 0) {
              const tasks = yield* sql<{ id: string; result: unknown }>`
                SELECT id, result FROM tasks WHERE ${sql.in("id", [...byTask.keys()])} FOR UPDATE`
              for (const task of tasks) {
                yield* sql`
                  UPDATE tasks SET result = ${expiredResult(task.result, byTask.get(task.id)!, now)}::jsonb,
                    updated_at = ${now}
                  WHERE id = ${task.id}`
              }
            }
            return rows
          }))
          const bytes = marked.reduce((n, r) => n + Number(r.size_bytes), 0)
          return { claimed: claimed.length, objects: marked.length, bytes }
        })

      const sweepGroup = ({ days, group }: { readonly group: string; readonly days: number }) =>
        Effect.gen(function*() {
          const before = (yield* nowSeconds) - Math.round(days * DAY_S)
          let objects = 0
          let bytes = 0
          for (;;) {
            const done = yield* groupBatch(group, before)
            objects += done.objects
            bytes += done.bytes
            if (done.objects > 0) metrics.resultsSwept(group, done.objects, done.bytes)
            // A short batch, or one whose every removal failed (storage away: the next pass tries again).
            if (done.claimed < batch || done.objects === 0) break
          }
          return { objects, bytes }
        })

      const sweep = Effect.forEach(retained, sweepGroup).pipe(
        Effect.map((done) => ({
          objects: done.reduce((n, d) => n + d.objects, 0),
          bytes: done.reduce((n, d) => n + d.bytes, 0)
        })),
        Effect.orDie,
        Effect.withSpan("ResultSweep.sweep")
      )
      return { sweep }
    })
  )
}
