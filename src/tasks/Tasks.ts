import { Clock, Context, Effect, Layer } from "effect"
import type { Principal } from "../accounts/Account.ts"
import { Billing, type Priced } from "../billing/Billing.ts"
import type { ValidImageRequest } from "../catalog/contract/Requests.ts"
import { UnsupportedModel } from "../catalog/Errors.ts"
import { lifecycleOf, withModel } from "../catalog/Lifecycle.ts"
import { Registry } from "../catalog/Registry.ts"
import { type AdmittedVideo, admitVideo } from "../catalog/VideoRequest.ts"
import { ChannelStates } from "../channel/ChannelStates.ts"
import { ModelUnavailable } from "../channel/Errors.ts"
import { AppConfig } from "../platform/AppConfig.ts"
import { canonicalJson, Sha256 } from "../platform/Digest.ts"
import { Metrics } from "../platform/metrics/Metrics.ts"
import type { Deprecation } from "../platform/Settings.ts"
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
  /** The model is on its way out: the handler answers with its Deprecation, Sunset and Link. */
  readonly deprecation?: Deprecation | undefined
}

/**
 * Creating tasks, with no HTTP in it: a caller and a body in, the queued
 * task (or a feature's tagged error) out. The handlers (CreateHttp.ts, the
 * synchronous image endpoints in src/images/) read the request and write the
 * answer; everything between is here, each feature asked once, in the order
 * the spec implies: the catalog admits the request (the plugin-derived
 * validation and the channel that runs it, among those taking new work), the
 * confirmed reference media are checked against the model's media table,
 * then the store prices, pre-charges and inserts the task in one statement
 * (TaskStore.create, `create_task`). Nothing is charged before all checks pass.
 */
const make = Effect.gen(function*() {
  const registry = yield* Registry
  const store = yield* TaskStore
  const references = yield* ReferenceMedia
  const sha = yield* Sha256
  const config = yield* AppConfig
  const states = yield* ChannelStates
  const billing = yield* Billing
  const metrics = yield* Metrics

  /** The routes whose channels take new work now; none is a 503 before anything is charged. */
  const openRoutes = <R extends { readonly channel: string }>(model: string, routes: ReadonlyArray<R>) =>
    Effect.gen(function*() {
      const open = yield* Effect.filter(routes, (r) => states.takesNew(r.channel))
      return open.length > 0 ? open : yield* ModelUnavailable.of(model)
    })

  /** What a task is priced by: its model's price per unit, how many units, at the caller's group's rate (Billing). */
  const priced = (
    principal: Principal,
    unit: Priced["unit"],
    served: { readonly price: number; readonly settings: { readonly subscription: boolean } },
    quantity: number
  ): Priced => ({
    unit,
    unitPrice: served.price,
    quantity,
    group: principal.group,
    subscriptionAllowed: served.settings.subscription
  })
  /** Per requested second of video, at the price of the model the catalog admitted it for; per output image. */
  const videoPriced = (principal: Principal, { request, served }: Pick<AdmittedVideo, "request" | "served">) =>
    priced(principal, "second", served, request.duration)
  const imagePriced = (principal: Principal, valid: ValidImageRequest) =>
    priced(principal, "image", registry.image(valid.model)!, valid.count)

  /**
   * Every check of a video create that refuses the request itself, before
   * anything is stored or charged: the catalog's admission (for a create,
   * among the channels taking new work; for a quote, among all) and the
   * confirmed reference media against the model's media table.
   */
  const admit = <E>(admission: Effect.Effect<AdmittedVideo, E>) =>
    Effect.tap(admission, (admitted) => references.checkAtCreation(admitted.served.capability, admitted.request))

  /**
   * The request's model as its lifecycle has it (catalog/Lifecycle.ts): an
   * alias read as its target, a retired model refused naming its successor,
   * a deprecated one counted (by model, never by caller).
   */
  const lifecycle = <B>(kind: "video" | "image", body: B) =>
    Effect.gen(function*() {
      const now = Math.floor((yield* Clock.currentTimeMillis) / 1000)
      const requested = typeof body === "object" && body !== null ? (body as { model?: unknown }).model : undefined
      const found = lifecycleOf(registry, kind, requested, now)
      if (found instanceof UnsupportedModel) return yield* found
      return { body: withModel(body, found.model), deprecation: found.deprecation }
    })

  /** The quote's checks: those of a create, whatever the channels' states. */
  const checkVideo = (raw: unknown) =>
    Effect.flatMap(lifecycle("video", raw), ({ body }) => admit(admitVideo(registry.video, body)))

  const createVideo = (context: CreateContext, raw: unknown) =>
    Effect.gen(function*() {
      const { body, deprecation } = yield* lifecycle("video", raw)
      if (deprecation !== undefined) metrics.deprecatedCreate("video", (body as { model: string }).model)
      const admitted = yield* admit(admitVideo(registry.video, body, states.takesNew))
      const { request, route } = admitted
      const created = yield* store.create({
        accountId: context.principal.accountId,
        keyId: context.principal.keyId,
        kind: "video",
        model: request.model,
        operation: request.operation,
        request,
        clientReferenceId: request.clientReferenceId,
        metadata: request.metadata,
        idempotencyKey: context.idempotencyKey,
        digest: yield* sha.hex(canonicalJson(body)),
        price: videoPriced(context.principal, admitted),
        // The first channel that takes it; failover to the next is the engine's business.
        channel: route.channel,
        traceparent: context.traceparent,
        cancelAfterSeconds: context.cancelAfterSeconds ?? null
      })
      return { task: created.task as VideoTask, replayed: created.replayed, deprecation } satisfies Created<VideoTask>
    }).pipe(annotated, Effect.withSpan("Tasks.createVideo", CREATE_SPAN))

  /** The image request checked against the model's table and its input URLs against the outbound rule. */
  const validateImage = (raw: ImageSubmission) =>
    Effect.gen(function*() {
      const { body } = yield* lifecycle("image", raw.body)
      return yield* validateSubmission({ ...raw, body }).pipe(
        Effect.provideService(Registry, registry),
        Effect.provideService(AppConfig, config)
      )
    })

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
        keyId: context.principal.keyId,
        kind: "image",
        model: valid.model,
        operation: valid.operation,
        request: valid,
        clientReferenceId: valid.clientReferenceId,
        metadata: valid.metadata,
        idempotencyKey: context.idempotencyKey,
        digest: yield* sha.hex(canonicalJson(submission.content)),
        price: imagePriced(context.principal, valid),
        channel: route!.channel,
        traceparent: context.traceparent,
        cancelAfterSeconds: context.cancelAfterSeconds ?? null
      })
      const deprecation = served.settings.deprecated
      if (deprecation !== undefined) metrics.deprecatedCreate("image", valid.model)
      return { task: created.task as ImageTask, replayed: created.replayed, deprecation } satisfies Created<ImageTask>
    }).pipe(annotated, Effect.withSpan("Tasks.createImage", CREATE_SPAN))

  const createImage = (context: CreateContext, submission: ImageSubmission) =>
    Effect.flatMap(validateImage(submission), (valid) => createValidImage(context, submission, valid))

  return {
    createVideo,
    createImage,
    validateImage,
    createValidImage,
    checkVideo,
    videoPrice: (principal: Principal, admitted: Pick<AdmittedVideo, "request" | "served">) =>
      billing.price(videoPriced(principal, admitted)),
    imagePrice: (principal: Principal, valid: ValidImageRequest) => billing.price(imagePriced(principal, valid))
  } as const
})

/** A create's span: no stack trace, as on the polling path (an Error and its capture for every create). */
const CREATE_SPAN = { captureStackTrace: false } as const

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
