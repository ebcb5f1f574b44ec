import { FileSystem, Path } from "@effect/platform"
import { Context, Effect, Layer, Schedule } from "effect"
import type { MediaKind, VideoModelCapability } from "../catalog/contract/Capabilities.ts"
import type { ValidVideoRequest } from "../catalog/contract/Requests.ts"
import { DURATION_EXCEEDED, DURATION_UNREADABLE, InvalidRequest } from "../catalog/Errors.ts"
import {
  checkReferenceMedia,
  constraintOf,
  type KnownMedia,
  type ReferenceSlot,
  referenceSlots,
  type Violation
} from "../catalog/ReferenceRules.ts"
import { Registry } from "../catalog/Registry.ts"
import { GenerationError } from "../channel/contract/Generation.ts"
import { describeType, MediaInspector } from "../media/MediaInspector.ts"
import { RemoteMedia } from "../media/RemoteMedia.ts"
import { AppConfig } from "../platform/AppConfig.ts"
import { checkTargetUrl } from "../platform/TargetUrl.ts"
import { nowSeconds } from "../platform/Time.ts"
import { Uploads } from "../uploads/Uploads.ts"
import { VideoKind } from "./VideoKind.ts"

/**
 * At creation a confirmed upload's content is known: a broken rule is a 400.
 * A duration below the minimum is an invalid duration, one above a per-file
 * or total cap is exceeded; a wrong type or size is a plain invalid request.
 */
const creationCode = (v: Violation): InvalidRequest["code"] =>
  v.rule === "too_long" || v.rule === "total"
    ? DURATION_EXCEEDED
    : v.rule === "too_short"
    ? DURATION_UNREADABLE
    : "invalid_request"

/**
 * In the engine the task fails. For a video or audio reference every reason
 * its real duration could not be established (fetch, type, content) is
 * `invalid_reference_media_duration`; an image reference that cannot be used
 * fails the task as `video_task_failed`. None is worth retrying as is.
 */
const engineFailure = (kind: MediaKind, code: string | undefined, message: string, retryable = false) =>
  new GenerationError({
    code: code ?? (kind === "image" ? VideoKind.codes.failed : DURATION_UNREADABLE),
    message,
    retryable,
    transient: false
  })

const engineViolation = (v: Violation) =>
  engineFailure(
    v.kind,
    v.rule === "too_long" || v.rule === "total"
      ? DURATION_EXCEEDED
      : v.rule === "too_short"
      ? DURATION_UNREADABLE
      : undefined,
    v.message
  )

/**
 * The reference media rules of a model's table, applied twice: when a task is
 * created, to the references that are confirmed uploads (their content is
 * known, so a broken rule is a 400 before idempotency and charge), and when
 * the engine runs the task, to all of them, fetching and probing external
 * URLs (a broken rule fails the task, which refunds it).
 */
export class ReferenceMedia extends Context.Tag("ReferenceMedia")<ReferenceMedia, {
  readonly checkAtCreation: (
    capability: VideoModelCapability,
    request: ValidVideoRequest
  ) => Effect.Effect<void, InvalidRequest>
  /** For a claimed video task; a model no longer served is left to the engine's own check. */
  readonly checkBeforeRun: (modelId: string, request: ValidVideoRequest) => Effect.Effect<void, GenerationError>
}>() {
  static readonly layer = Layer.effect(
    ReferenceMedia,
    Effect.gen(function*() {
      const uploads = yield* Uploads
      const remote = yield* RemoteMedia
      const inspector = yield* MediaInspector
      const fs = yield* FileSystem.FileSystem
      const path = yield* Path.Path
      const config = yield* AppConfig
      const registry = yield* Registry
      const engine = config.limits.engine
      const retry = Schedule.exponential(engine.retry_base_ms).pipe(
        Schedule.intersect(Schedule.recurs(engine.generate_retries))
      )

      const checkAtCreation = (capability: VideoModelCapability, request: ValidVideoRequest) => {
        const slots = referenceSlots(request)
        // A request without references has nothing to check: no span for it (most creates are text to video).
        return slots.length === 0 ? Effect.void : checkSlots(capability, slots)
      }

      const checkSlots = (capability: VideoModelCapability, slots: ReturnType<typeof referenceSlots>) =>
        Effect.gen(function*() {
          const confirmed = yield* uploads.findConfirmed(slots.map((s) => s.url))
          const now = yield* nowSeconds
          const known: Array<KnownMedia> = []
          for (const slot of slots) {
            const upload = confirmed.get(slot.url)
            if (upload === undefined) {
              yield* checkTargetUrl(slot.url, config.allowPrivateTargets).pipe(
                Effect.mapError((e) => new InvalidRequest({ code: e.code, message: `${slot.where}: ${e.message}` }))
              )
              continue
            }
            if (upload.kind !== slot.kind) {
              return yield* new InvalidRequest({
                code: "invalid_request",
                message: `${slot.where} is the URL of a confirmed ${upload.kind} upload; this field takes ${slot.kind}.`
              })
            }
            if (upload.urlExpiresAt <= now) {
              return yield* new InvalidRequest({
                code: "invalid_request",
                message:
                  `${slot.where}: the URL of upload ${upload.id} has expired; confirm the upload again for a fresh URL.`
              })
            }
            known.push({
              where: slot.where,
              kind: slot.kind,
              mimeType: upload.mimeType,
              sizeBytes: upload.sizeBytes,
              durationMs: upload.durationMs
            })
          }
          const violation = checkReferenceMedia(capability, known)
          if (violation !== undefined) {
            return yield* new InvalidRequest({ code: creationCode(violation), message: violation.message })
          }
        }).pipe(Effect.withSpan("ReferenceMedia.checkAtCreation", { captureStackTrace: false }))

      /** Fetches one external reference into a temporary file and reads what it really is. */
      const inspectExternal = (slot: ReferenceSlot, maxBytes: number) =>
        Effect.gen(function*() {
          const dir = yield* fs.makeTempDirectoryScoped({ prefix: "reference-" }).pipe(
            Effect.mapError(() =>
              engineFailure(slot.kind, VideoKind.codes.failed, `${slot.where} could not be inspected.`, true)
            )
          )
          const fetched = yield* remote.fetchToFile(slot.url, { maxBytes, file: path.join(dir, "media") }).pipe(
            Effect.retry({ schedule: retry, while: (e) => e.transient }),
            Effect.mapError((e) =>
              engineFailure(slot.kind, undefined, `${slot.where} could not be fetched: ${e.message}.`, e.transient)
            )
          )
          const found = yield* inspector.inspectFile(fetched.path, fetched.head, fetched.sizeBytes).pipe(
            Effect.mapError((e) =>
              e.reason === "unavailable"
                ? engineFailure(
                  slot.kind,
                  VideoKind.codes.failed,
                  `${slot.where} could not be inspected; try again.`,
                  true
                )
                : engineFailure(slot.kind, undefined, `${slot.where}: ${e.message}.`)
            )
          )
          if (found.kind !== slot.kind) {
            return yield* engineFailure(
              slot.kind,
              undefined,
              `${slot.where} is ${describeType(found.mimeType)}, not ${
                slot.kind === "image" ? "an image" : `a ${slot.kind} file`
              }.`
            )
          }
          return {
            where: slot.where,
            kind: slot.kind,
            mimeType: found.mimeType,
            sizeBytes: found.sizeBytes,
            durationMs: found.durationMs
          } satisfies KnownMedia
        }).pipe(
          Effect.scoped,
          Effect.withSpan("ReferenceMedia.inspectExternal", { attributes: { "reference.where": slot.where } })
        )

      const checkBeforeRun = (modelId: string, request: ValidVideoRequest) =>
        Effect.gen(function*() {
          const capability = registry.video(modelId)?.capability
          const slots = referenceSlots(request)
          if (capability === undefined || slots.length === 0) return
          const confirmed = yield* uploads.findConfirmed(slots.map((s) => s.url))
          const known: Array<KnownMedia> = []
          const external: Array<{ slot: ReferenceSlot; maxBytes: number }> = []
          for (const slot of slots) {
            const upload = confirmed.get(slot.url)
            if (upload !== undefined && upload.kind === slot.kind) {
              known.push({
                where: slot.where,
                kind: slot.kind,
                mimeType: upload.mimeType,
                sizeBytes: upload.sizeBytes,
                durationMs: upload.durationMs
              })
              continue
            }
            // Only what the model's table constrains is fetched; the rest is the provider's to read.
            const constraint = constraintOf(capability, slot.kind)
            if (constraint !== undefined) external.push({ slot, maxBytes: constraint.max_bytes })
          }
          known.push(
            ...yield* Effect.forEach(external, ({ maxBytes, slot }) => inspectExternal(slot, maxBytes), {
              concurrency: 2
            })
          )
          const violation = checkReferenceMedia(capability, known)
          if (violation !== undefined) return yield* engineViolation(violation)
        }).pipe(
          Effect.tapError((e) =>
            Effect.logInfo("reference media refused").pipe(Effect.annotateLogs({ code: e.code, reason: e.message }))
          ),
          Effect.withSpan("task.references")
        )

      return { checkAtCreation, checkBeforeRun }
    })
  )
}
