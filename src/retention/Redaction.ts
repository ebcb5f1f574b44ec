import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer, Option } from "effect"
import { Channels } from "../channel/Channels.ts"
import { TaskKind } from "../channel/contract/Adapter.ts"
import { type AsyncRunner, isAsyncRunner } from "../channel/contract/Upstream.ts"
import { AppConfig } from "../platform/AppConfig.ts"
import { Metrics } from "../platform/metrics/Metrics.ts"
import { nowSeconds } from "../platform/Time.ts"
import { ObjectStorage } from "../storage/ObjectStorage.ts"
import { requestUrlDigests } from "../uploads/RequestUrlDigests.ts"
import { UploadSweep } from "../uploads/UploadSweep.ts"
import { REDACTED, redactedEventPayload, redactedRequest } from "./RedactedRequest.ts"

/** A provider delete's claim outlives its call by far; a sweeper that died lets it run out. */
const FORGET_LEASE_S = 600

export interface Redacted {
  /** Tasks redacted. */
  readonly tasks: number
  /** Provider copies deleted (or found gone). */
  readonly forgotten: number
}

/**
 * Data minimisation (docs/operating.md): a task of a group with
 * `redact_requests` keeps its prompt, references and metadata only while it
 * runs. Once it ended (and its webhook events went out, or
 * `retention.redact_wait_s` passed), one transaction redacts its stored
 * request (RedactedRequest.ts), its metadata, its events' payloads and the
 * providers' answers kept for operators, expires the confirmed uploads and
 * image pre-uploads its request used (the upload sweep then removes their
 * bytes, unless a running task still uses them) and marks the attempts whose
 * provider can delete its copy. Then the provider deletes are asked, each
 * recorded on its attempt. Rows are claimed `FOR UPDATE SKIP LOCKED`, so
 * replicas share the work; a crash leaves nothing half done (the
 * transaction) or a provider delete to ask again (its lease).
 */
export class Redaction extends Context.Tag("Redaction")<Redaction, {
  /** One pass: tasks redacted batch by batch until one comes back short, then the provider deletes asked. */
  readonly sweep: Effect.Effect<Redacted>
}>() {
  static readonly layer = Layer.effect(
    Redaction,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const channels = yield* Channels
      const storage = yield* ObjectStorage
      const uploads = yield* UploadSweep
      const metrics = yield* Metrics
      const { groups, limits } = yield* AppConfig
      const { redact_wait_s: waitS, sweep_batch: batch } = limits.retention
      const redacting = Object.entries(groups.groups).flatMap(([group, g]) => g.redact_requests === true ? [group] : [])

      /** A channel's runner of one kind that can delete the provider's copy, if any. */
      const forgetter = (channel: string, kind: TaskKind) =>
        channels.get(channel) === undefined
          ? Effect.succeed(Option.none<NonNullable<AsyncRunner<unknown>["forget"]>>())
          : channels.runner(channel).pipe(
            Effect.map((runner) => {
              const r = (runner as Partial<Record<TaskKind, unknown>>)[kind]
              return Option.fromNullable(isAsyncRunner(r) ? r.forget : undefined)
            }),
            Effect.orElseSucceed(() => Option.none())
          )

      /** The channels whose adapter can delete a provider's copy of a task, for some kind. */
      const forgetful = Effect.map(
        Effect.forEach(
          channels.all,
          ({ name }) =>
            Effect.map(
              Effect.forEach(TaskKind.literals, (kind) => forgetter(name, kind)),
              (found) => found.some(Option.isSome) ? [name] : []
            )
        ),
        (names) => names.flat()
      )

      const redactBatch = (channelsThatForget: ReadonlyArray<string>) =>
        sql.withTransaction(Effect.gen(function*() {
          const now = yield* nowSeconds
          const tasks = yield* sql<{ id: string; request: unknown; group_name: string }>`
            SELECT t.id, t.request, a.group_name FROM tasks t JOIN accounts a ON a.id = t.account_id
            WHERE t.account_id IN (SELECT id FROM accounts WHERE ${sql.in("group_name", redacting)})
              AND t.redacted_at IS NULL AND t.status IN ('succeeded', 'failed')
              AND (t.completed_at < ${now - waitS} OR NOT EXISTS (
                SELECT 1 FROM webhook_events e WHERE e.task_id = t.id AND e.status IN ('pending', 'held')))
            LIMIT ${batch}
            FOR UPDATE OF t SKIP LOCKED`
          if (tasks.length === 0) return { tasks: [], keys: [] as Array<string> }
          const ids = tasks.map((t) => t.id)
          // The uploads the requests used, by the digests of their URLs (as Uploads records them): expired now,
          // so the upload sweep removes them once no running task uses them.
          const used = requestUrlDigests(sql, sql.in("t.id", ids))
          yield* sql`
            WITH used AS (${used})
            UPDATE media_uploads m SET url_expires_at = 0
            FROM media_upload_urls x, used
            WHERE x.upload_id = m.id AND x.url_digest = used.url_digest AND m.account_id = used.account_id
              AND m.status = 'confirmed'`
          yield* sql`
            WITH used AS (${used})
            UPDATE image_uploads i SET expires_at = 0
            FROM used WHERE i.url_digest = used.url_digest AND i.account_id = used.account_id`
          // Images a multipart edit stored (content-addressed per account, so one may serve several tasks):
          // their objects go after the commit, but not those a task of the account still running uses.
          const stored = [...new Set(tasks.flatMap((t) => storageKeysOf(t.request)))]
          const inUse = stored.length === 0 ? [] : (yield* sql<{ key: string }>`
            SELECT DISTINCT k.value #>> '{}' AS key
            FROM tasks t CROSS JOIN LATERAL jsonb_path_query(t.request, 'lax $.**.storageKey') AS k(value)
            WHERE t.account_id IN (SELECT account_id FROM tasks WHERE ${sql.in("id", ids)})
              AND t.status IN ('queued', 'in_progress')`).map((r) => r.key)
          const keys = stored.filter((key) => !inUse.includes(key))
          for (const task of tasks) {
            yield* sql`
              UPDATE tasks SET request = ${JSON.stringify(redactedRequest(task.request))}::jsonb,
                metadata = CASE WHEN metadata IS NULL THEN NULL ELSE '{}'::jsonb END, redacted_at = ${now}
              WHERE id = ${task.id}`
          }
          yield* sql`
            UPDATE task_attempts SET
              last_answer = CASE WHEN last_answer IS NULL THEN NULL ELSE ${
            JSON.stringify({ redacted: true })
          }::jsonb END,
              upstream_message = CASE WHEN upstream_message IS NULL THEN NULL ELSE ${REDACTED} END
            WHERE ${sql.in("task_id", ids)}`
          if (channelsThatForget.length > 0) {
            yield* sql`
              UPDATE task_attempts SET upstream_forget = 'pending'
              WHERE ${sql.in("task_id", ids)} AND upstream_id IS NOT NULL AND upstream_forget IS NULL
                AND ${sql.in("channel", channelsThatForget)}`
          }
          const events = yield* sql<{ id: string; payload: string }>`
            SELECT id, payload::text AS payload FROM webhook_events WHERE ${sql.in("task_id", ids)}`
          for (const event of events) {
            const redacted = redactedEventPayload(event.payload)
            if (redacted !== event.payload) {
              yield* sql`UPDATE webhook_events SET payload = ${redacted}::json WHERE id = ${event.id}`
            }
          }
          for (const [group, count] of countBy(tasks.map((t) => t.group_name))) {
            metrics.requestsRedacted(group, count)
          }
          return { tasks: ids, keys }
        }))

      /** One batch of provider deletes: claimed under a lease, asked, each outcome recorded. */
      const forgetBatch = Effect.gen(function*() {
        const now = yield* nowSeconds
        const claimed = yield* sql<
          { task_id: string; attempt: number; channel: string; upstream_id: string; kind: TaskKind }
        >`
          UPDATE task_attempts a SET upstream_forget_lease = ${now + FORGET_LEASE_S}
          FROM tasks t
          WHERE t.id = a.task_id AND (a.task_id, a.attempt) IN (
            SELECT task_id, attempt FROM task_attempts
            WHERE upstream_forget = 'pending' AND (upstream_forget_lease IS NULL OR upstream_forget_lease < ${now})
            LIMIT ${batch}
            FOR UPDATE SKIP LOCKED)
          RETURNING a.task_id, a.attempt, a.channel, a.upstream_id, t.kind`
        let forgotten = 0
        for (const row of claimed) {
          const forget = yield* forgetter(row.channel, row.kind)
          const outcome = Option.isNone(forget)
            ? ("failed" as const)
            : yield* forget.value(row.upstream_id).pipe(
              Effect.as("deleted" as const),
              Effect.catchAll((e) =>
                Effect.logWarning("deleting a provider's copy of a task failed").pipe(
                  Effect.annotateLogs({ task_id: row.task_id, channel: row.channel, reason: e.message }),
                  // A transient failure stays pending: asked again once its lease ran out.
                  Effect.as(e.transient ? ("pending" as const) : ("failed" as const))
                )
              )
            )
          if (outcome === "pending") continue
          if (outcome === "deleted") forgotten++
          yield* sql`
            UPDATE task_attempts SET upstream_forget = ${outcome}, upstream_forget_at = ${yield* nowSeconds}
            WHERE task_id = ${row.task_id} AND attempt = ${row.attempt}`
        }
        return { claimed: claimed.length, forgotten }
      })

      const sweep = Effect.gen(function*() {
        if (redacting.length === 0) return { tasks: 0, forgotten: 0 }
        const channelsThatForget = yield* forgetful
        let tasks = 0
        let expiredUploads = false
        for (;;) {
          const done = yield* redactBatch(channelsThatForget)
          tasks += done.tasks.length
          expiredUploads ||= done.tasks.length > 0
          yield* Effect.forEach(done.keys, (key) =>
            storage.remove(key).pipe(
              Effect.catchAll((e) => Effect.logWarning("removing a redacted task's stored image failed", e))
            ), { discard: true })
          if (done.tasks.length < batch) break
        }
        // The uploads just expired go now rather than at the upload sweep's next turn.
        if (expiredUploads) yield* uploads.sweep
        let forgotten = 0
        for (;;) {
          const done = yield* forgetBatch
          forgotten += done.forgotten
          if (done.claimed < batch) break
        }
        return { tasks, forgotten }
      }).pipe(Effect.orDie, Effect.withSpan("Redaction.sweep"))
      return { sweep }
    })
  )
}

/** The storage keys of images a multipart edit stored with the request (`storageKey` members at any depth). */
const storageKeysOf = (value: unknown): Array<string> => {
  if (Array.isArray(value)) return value.flatMap(storageKeysOf)
  if (value === null || typeof value !== "object") return []
  return Object.entries(value as Record<string, unknown>).flatMap(([key, member]) =>
    key === "storageKey" && typeof member === "string" && member !== REDACTED ? [member] : storageKeysOf(member)
  )
}

const countBy = (values: ReadonlyArray<string>) => {
  const counts = new Map<string, number>()
  for (const v of values) counts.set(v, (counts.get(v) ?? 0) + 1)
  return counts
}
