import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { Registry } from "../catalog/Registry.ts"
import { Channels } from "../channel/Channels.ts"
import type { TaskKind } from "../channel/contract/Adapter.ts"
import { isAsyncRunner, type ListedTask } from "../channel/contract/Upstream.ts"
import { ChannelNotFound } from "../channel/Errors.ts"
import type { Reconciliation } from "./ChannelsApi.ts"
import { InvalidReconcileWindow, ReconciliationFailed, ReconciliationUnavailable } from "./Errors.ts"
import { attemptsCreated, attemptsOf, type RecordedAttempt } from "./RecordedAttempts.ts"

/**
 * Reconciling a channel against its provider's own record (docs/operating.md,
 * Reconciling a channel): what the provider says it ran in a window, read
 * through the adapter's `list`, against the attempts recorded. Three kinds of
 * difference: a task the provider ran that no attempt knows (a create whose
 * answer was lost, or a task another system made with the same key), an
 * attempt whose upstream id the provider does not have, and a task whose usage
 * or billing the provider tells otherwise than the attempt recorded. It
 * changes nothing: an operator acts on the answer.
 */

/** The longest window: the providers keep their records about a week (Ark 7 days), a month at most. */
const MAX_WINDOW_S = 31 * 86_400
/**
 * Provider tasks and attempts this far around the window are read too: a
 * task's creation at the provider follows its attempt's by up to a submit's
 * time-out (and a reclaimed submit adopts it later still), so a task just
 * inside the window is matched to an attempt just outside it, and the reverse.
 */
const MARGIN_S = 600
/** Upstream ids looked up in one statement. */
const LOOKUP_BATCH = 500

const seconds = (ms: number) => Math.floor(ms / 1000)

/** A usage as the answer shows it: the count and the provider's own fields. */
const usageObject = (task: ListedTask) =>
  task.usage === undefined ? null : { ...task.usage.fields, unit: task.usage.unit, quantity: task.usage.quantity }

const same = (a: number, b: number) => Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(a), Math.abs(b))

/**
 * Whether the provider tells the task's usage or billing otherwise than the
 * attempt recorded: a different count in the same unit, a different value of
 * a field both keep (Ark's `completion_tokens` under a route priced per
 * second), or billed where it was recorded as not, or the reverse. An attempt
 * still under way (nothing recorded yet) is not compared.
 */
const differs = (listed: ListedTask, attempt: RecordedAttempt) => {
  if (attempt.billed === null) return false
  if (listed.billed !== undefined && listed.billed !== attempt.billed) return true
  const recorded = attempt.usage
  if (listed.usage === undefined || recorded === null) return false
  if (recorded.unit === listed.usage.unit && typeof recorded.quantity === "number") {
    if (!same(recorded.quantity, listed.usage.quantity)) return true
  }
  return Object.entries(listed.usage.fields ?? {}).some(([field, value]) =>
    typeof value === "number" && typeof recorded[field] === "number" && !same(value, recorded[field] as number)
  )
}

export const reconcileChannel = (name: string, window: { readonly from: number; readonly to: number }) =>
  Effect.gen(function*() {
    if (window.from >= window.to) {
      return yield* new InvalidReconcileWindow({ message: "Query parameter \"from\" must be before \"to\"." })
    }
    if (window.to - window.from > MAX_WINDOW_S) {
      return yield* new InvalidReconcileWindow({
        message: `The window is longer than ${MAX_WINDOW_S / 86_400} days; providers keep their records less long.`
      })
    }
    const channels = yield* Channels
    const channel = channels.get(name)
    if (channel === undefined) {
      return yield* new ChannelNotFound({ message: `No channel named "${name}" is configured.` })
    }
    const registry = yield* Registry
    // Made once per process, as for a cancel; a broken adapter would have stopped the boot.
    const runner = yield* Effect.orDie(channels.runner(name))
    const routed = (kind: TaskKind) => [
      ...new Set(
        (kind === "video" ? registry.videoModels : registry.imageModels).flatMap((m) =>
          m.routes.filter((r) => r.channel === name).map((r) => r.upstreamModel)
        )
      )
    ]
    const listers = channel.adapter.kinds.flatMap((kind) => {
      const kindRunner = (runner as Partial<Record<TaskKind, unknown>>)[kind]
      const list = isAsyncRunner(kindRunner) ? kindRunner.list : undefined
      return list === undefined ? [] : [{ kind, list, upstreamModels: routed(kind) }]
    })
    if (listers.length === 0) {
      return yield* new ReconciliationUnavailable({
        message:
          `Channel "${name}" cannot be reconciled: its adapter (${channel.adapter.name}) cannot read its provider's record of tasks.`
      })
    }

    const margin = Math.max(MARGIN_S, channel.settings.timeouts.submit_s + 60)
    const wide = { from: (window.from - margin) * 1000, to: (window.to + margin) * 1000 }
    const listed = new Map<string, ListedTask>()
    for (const { list, upstreamModels } of listers) {
      if (upstreamModels.length === 0) continue
      const tasks = yield* list({ ...wide, upstreamModels }).pipe(
        Effect.mapError((e) =>
          new ReconciliationFailed({
            message: `The provider of channel "${name}" did not list its tasks: ${
              [e.upstream?.status, e.upstream?.code, e.upstream?.message ?? e.message].filter((p) => p !== undefined)
                .join(" ")
            }.`
          })
        )
      )
      for (const task of tasks) listed.set(task.upstreamId, task)
    }
    const inWindow = [...listed.values()].filter((t) =>
      t.createdAt >= window.from * 1000 && t.createdAt < window.to * 1000
    )

    const sql = yield* SqlClient.SqlClient
    const recorded = yield* attemptsCreated(sql, name, window.from - margin, window.to + margin)
    const byId = new Map<string, RecordedAttempt>()
    // The latest attempt holding an id is the one whose record stands (an earlier one may have stopped mid-submit).
    const keep = (a: RecordedAttempt) => {
      const held = byId.get(a.upstream_id)
      if (held === undefined || held.attempt < a.attempt || held.task_id !== a.task_id) byId.set(a.upstream_id, a)
    }
    recorded.forEach(keep)
    // A provider task of the window with no attempt near it may still have one further away: looked up by id.
    const unmatched = inWindow.map((t) => t.upstreamId).filter((id) => !byId.has(id))
    for (let i = 0; i < unmatched.length; i += LOOKUP_BATCH) {
      ;(yield* attemptsOf(sql, name, unmatched.slice(i, i + LOOKUP_BATCH))).forEach(keep)
    }

    const lostCreates = inWindow.filter((t) => !byId.has(t.upstreamId)).map((t) => ({
      upstream_id: t.upstreamId,
      created_at: seconds(t.createdAt),
      model: t.model ?? null,
      status: t.status ?? null,
      usage: usageObject(t),
      billed: t.billed ?? null
    }))
    const ofWindow = recorded.filter((a) => a.created_at >= window.from && a.created_at < window.to)
    const unseenAttempts = ofWindow.filter((a) => !listed.has(a.upstream_id)).map((a) => ({
      upstream_id: a.upstream_id,
      task_id: a.task_id,
      attempt: a.attempt,
      outcome: a.outcome,
      created_at: Number(a.created_at)
    }))
    const usageMismatches = inWindow.flatMap((t) => {
      const attempt = byId.get(t.upstreamId)
      if (attempt === undefined || !differs(t, attempt)) return []
      return [{
        upstream_id: t.upstreamId,
        task_id: attempt.task_id,
        attempt: attempt.attempt,
        provider: { usage: usageObject(t), billed: t.billed ?? null },
        recorded: {
          usage: attempt.usage,
          billed: attempt.billed,
          cost: attempt.cost_micros === null ? null : Number(attempt.cost_micros) / 1_000_000
        }
      }]
    })

    yield* Effect.logInfo("channel reconciled").pipe(Effect.annotateLogs({
      channel: name,
      from: window.from,
      to: window.to,
      lost_creates: lostCreates.length,
      unseen_attempts: unseenAttempts.length,
      usage_mismatches: usageMismatches.length
    }))
    const answer: Reconciliation = {
      object: "channel.reconciliation",
      channel: name,
      adapter: channel.adapter.name,
      from: window.from,
      to: window.to,
      provider_tasks: inWindow.length,
      attempts: ofWindow.length,
      lost_creates: lostCreates,
      unseen_attempts: unseenAttempts,
      usage_mismatches: usageMismatches
    }
    return answer
  }).pipe(
    Effect.catchTag("SqlError", Effect.die),
    Effect.withSpan("ChannelOps.reconcile", { attributes: { "channel.name": name } })
  )
