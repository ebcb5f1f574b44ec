import { Context, Effect, Layer } from "effect"
import type { Principal } from "../accounts/Account.ts"
import { groupMultiplier, priceOf } from "../billing/Pricing.ts"
import type { ValidImageRequest, ValidVideoRequest } from "../catalog/contract/Requests.ts"
import { routeTaking } from "../catalog/Narrower.ts"
import { Registry } from "../catalog/Registry.ts"
import { validateVideoRequest } from "../catalog/VideoRequest.ts"
import { ChannelStates } from "../channel/ChannelStates.ts"
import { ModelUnavailable } from "../channel/Errors.ts"
import { AppConfig } from "../platform/AppConfig.ts"
import { canonicalJson, Sha256 } from "../platform/Digest.ts"
import { storageFailureForCaller } from "../storage/CallerFailure.ts"
import { type ImageSubmission, validateSubmission } from "./ImageTasks.ts"
import { ReferenceMedia } from "./ReferenceMedia.ts"
import type { ImageTask, VideoTask } from "./Task.ts"
import { TaskStore } from "./TaskStore.ts"

/** Who creates a task, and what the create request carries besides its body. */
export interface CreateContext {
  readonly principal: Principal
  /** The `Idempotency-Key`, already checked to be 1 to 128 characters; null when none was sent. */
  readonly idempotencyKey: string | null
  /** The create request's trace context, stored with the task so the engine continues its trace. */
  readonly traceparent: string | null
  /** The `Cancel-After` deadline in seconds from the create; none when absent. */
  readonly cancelAfterSeconds?: number | null | undefined
}

/** A created task, or the original one when the Idempotency-Key was used before with the same content. */
export interface Created<T> {
  readonly task: T
  readonly replayed: boolean
}

/**
 * Creating tasks, with no HTTP in it: a caller and a body in, the queued
 * task (or a feature's tagged error) out. The handlers (Http.ts, the
 * synchronous image endpoints in src/images/) read the request and write the
 * answer; everything between is here, in the order the spec implies: the
 * plugin-derived validation, the checks of confirmed reference media, the
 * channel that takes the request, then the pre-charge and the INSERT in one
 * transaction (TaskStore.create). Nothing is charged before all checks pass.
 */
const make = Effect.gen(function*() {
  const registry = yield* Registry
  const store = yield* TaskStore
  const references = yield* ReferenceMedia
  const sha = yield* Sha256
  const config = yield* AppConfig
  const states = yield* ChannelStates
  const { groups } = config

  /** The routes whose channels take new work now; none is a 503 before anything is charged. */
  const openRoutes = <R extends { readonly channel: string }>(model: string, routes: ReadonlyArray<R>) =>
    Effect.gen(function*() {
      const open = yield* Effect.filter(routes, (r) => states.takesNew(r.channel))
      if (open.length > 0) return open
      return yield* new ModelUnavailable({
        message: `The model "${model}" is temporarily unavailable. Try again later.`,
        retryAfter: UNAVAILABLE_RETRY_S
      })
    })

  /**
   * What a task costs the caller: the create charges exactly this, the quote
   * (Quotes.ts) shows it; price per unit × units × the group's multiplier.
   */
  const videoPrice = (principal: Principal, request: ValidVideoRequest) =>
    priceOf(
      "second",
      registry.video(request.model)!.price,
      request.duration,
      groupMultiplier(groups, principal.group)
    )
  const imagePrice = (principal: Principal, valid: ValidImageRequest) =>
    priceOf("image", registry.image(valid.model)!.price, valid.count, groupMultiplier(groups, principal.group))

  /**
   * Every check of a video create that refuses the request itself (400),
   * before anything is stored or charged: the plugin-derived validation, the
   * confirmed reference media against the model's media table, and some
   * channel of the model taking the request (a channel may take less than
   * the model's table, catalog/Narrower.ts). The quote runs exactly these.
   */
  const checkVideo = (body: unknown) =>
    Effect.gen(function*() {
      const request = yield* validateVideoRequest((id) => registry.video(id)?.capability, body)
      const served = registry.video(request.model)!
      yield* references.checkAtCreation(served.capability, request)
      yield* routeTaking(served.routes, body)
      return { request, served }
    })

  const createVideo = (context: CreateContext, body: unknown) =>
    Effect.gen(function*() {
      const { request, served } = yield* checkVideo(body)
      // Among the channels that take new work (an operator may drain or disable one).
      const route = yield* routeTaking(yield* openRoutes(request.model, served.routes), body).pipe(
        Effect.mapError(() =>
          new ModelUnavailable({
            message: `The model "${request.model}" is temporarily unavailable for this request. Try again later.`,
            retryAfter: UNAVAILABLE_RETRY_S
          })
        )
      )
      const created = yield* store.create({
        accountId: context.principal.accountId,
        kind: "video",
        model: request.model,
        operation: request.operation,
        request,
        clientReferenceId: request.clientReferenceId,
        metadata: request.metadata,
        idempotencyKey: context.idempotencyKey,
        digest: yield* sha.hex(canonicalJson(body)),
        chargeMicros: videoPrice(context.principal, request).micros,
        subscriptionAllowed: served.settings.subscription,
        // The first channel that takes it; failover to the next is the engine's business.
        channel: route.channel,
        traceparent: context.traceparent,
        cancelAfterSeconds: context.cancelAfterSeconds ?? null
      })
      return { task: created.task as VideoTask, replayed: created.replayed } satisfies Created<VideoTask>
    }).pipe(annotated, Effect.withSpan("Tasks.createVideo"))

  /** The image request checked against the model's table and its input URLs against the outbound rule. */
  const validateImage = (submission: ImageSubmission) =>
    validateSubmission(submission).pipe(
      Effect.provideService(Registry, registry),
      Effect.provideService(AppConfig, config)
    )

  /**
   * Creates and pre-charges (price per image × count × group multiplier) a
   * validated image task; the multipart files are stored first (after
   * validation, so a refused request stores nothing).
   */
  const createValidImage = (context: CreateContext, submission: ImageSubmission, valid: ValidImageRequest) =>
    Effect.gen(function*() {
      const served = registry.image(valid.model)!
      const [route] = yield* openRoutes(valid.model, served.routes)
      yield* submission.store.pipe(
        Effect.catchTag("StorageError", storageFailureForCaller("storing image inputs failed"))
      )
      const created = yield* store.create({
        accountId: context.principal.accountId,
        kind: "image",
        model: valid.model,
        operation: valid.operation,
        request: valid,
        clientReferenceId: valid.clientReferenceId,
        metadata: valid.metadata,
        idempotencyKey: context.idempotencyKey,
        digest: yield* sha.hex(canonicalJson(submission.content)),
        chargeMicros: imagePrice(context.principal, valid).micros,
        subscriptionAllowed: served.settings.subscription,
        channel: route!.channel,
        traceparent: context.traceparent,
        cancelAfterSeconds: context.cancelAfterSeconds ?? null
      })
      return { task: created.task as ImageTask, replayed: created.replayed } satisfies Created<ImageTask>
    }).pipe(annotated, Effect.withSpan("Tasks.createImage"))

  const createImage = (context: CreateContext, submission: ImageSubmission) =>
    Effect.flatMap(validateImage(submission), (valid) => createValidImage(context, submission, valid))

  return { createVideo, createImage, validateImage, createValidImage, checkVideo, videoPrice, imagePrice } as const
})

/** When a caller may try a model none of whose channels takes new work again: an operator's change is seconds away. */
const UNAVAILABLE_RETRY_S = 30

/** The created task on the request's span. */
const annotated = <T extends { readonly id: string; readonly model: string }, E, R>(
  effect: Effect.Effect<Created<T>, E, R>
) =>
  Effect.tap(
    effect,
    ({ replayed, task }) =>
      Effect.annotateCurrentSpan({ "task.id": task.id, "task.model": task.model, "task.replayed": replayed })
  )

export class Tasks extends Context.Tag("Tasks")<Tasks, Effect.Effect.Success<typeof make>>() {
  static readonly layer = Layer.effect(Tasks, make)
}
