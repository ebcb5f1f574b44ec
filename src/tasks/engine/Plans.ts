import { FileSystem } from "@effect/platform"
import { Chunk, Effect, Either, Option, Stream } from "effect"
import type { ImageSource, ValidImageRequest, ValidVideoRequest } from "../../catalog/contract/Requests.ts"
import { Registry, type RegistryService } from "../../catalog/Registry.ts"
import { CallbackTokens } from "../../channel/CallbackTokens.ts"
import { Channels } from "../../channel/Channels.ts"
import type { KindRunners, TaskKind } from "../../channel/contract/Adapter.ts"
import type { ChannelSettings } from "../../channel/contract/ChannelSettings.ts"
import { GenerationError, type GenerationEvent } from "../../channel/contract/Generation.ts"
import { type AsyncRunner, isAsyncRunner, type SubmitOutcome } from "../../channel/contract/Upstream.ts"
import { RemoteMedia } from "../../media/RemoteMedia.ts"
import { concatBytes } from "../../platform/Digest.ts"
import type { ModelRoute } from "../../platform/Settings.ts"
import { ObjectStorage } from "../../storage/ObjectStorage.ts"
import { IMAGE_FAILURE, IMAGE_UNAVAILABLE, ImageKind } from "../ImageKind.ts"
import { decodeStoredRequest, type StoredRequest } from "../StoredRequest.ts"
import type { TaskFailure } from "../TaskFailure.ts"
import { VIDEO_FAILURE } from "../VideoKind.ts"
import type { Pricing } from "./AttemptCost.ts"
import type { Claim, DecodedClaim } from "./Claim.ts"

/** A file made in this process (a generator's, or an upstream's synchronous answer): its bytes in memory. */
export type MadeOutput = Extract<GenerationEvent, { _tag: "Output" }>

/**
 * A result downloaded from an upstream: in a temporary file that the
 * download's scope removes, never whole in memory (a video may be a
 * gigabyte). `head` is its first bytes (up to SNIFF_BYTES), for sniffing.
 */
export interface DownloadedOutput extends Omit<MadeOutput, "_tag" | "bytes"> {
  readonly _tag: "Downloaded"
  readonly path: string
  readonly head: Uint8Array
  readonly sizeBytes: number
}

export type Output = MadeOutput | DownloadedOutput

export const sizeOf = (output: Output): number =>
  output._tag === "Downloaded" ? output.sizeBytes : output.bytes.byteLength

/** Where a stored output can be read: its asset id, file name and URL. */
export interface StoredOutput {
  readonly id: string
  readonly filename: string
  readonly url: string
  readonly temporary: boolean
}

/**
 * How a task is run on its channel: generated in this process (a stream of
 * events), or submitted to an asynchronous upstream that the engine then
 * polls (Upstream.ts). Both are lazy: nothing runs until the engine does.
 */
export type PlanRun =
  | { readonly _tag: "Generate"; readonly events: Stream.Stream<GenerationEvent, GenerationError> }
  | {
    readonly _tag: "Upstream"
    readonly runner: AsyncRunner<unknown>
    readonly upstreamModel: string
    readonly submit: Effect.Effect<SubmitOutcome, GenerationError>
    readonly find: Effect.Effect<string | undefined, GenerationError> | undefined
  }

const runOf = <J>(
  runner: KindRunners[TaskKind],
  upstreamModel: string,
  job: Effect.Effect<J, GenerationError>
): PlanRun => {
  if (isAsyncRunner(runner)) {
    const upstream = runner as AsyncRunner<J>
    const find = upstream.find
    return {
      _tag: "Upstream",
      runner: runner,
      upstreamModel,
      submit: Effect.flatMap(job, upstream.submit),
      find: find === undefined ? undefined : Effect.flatMap(job, find)
    }
  }
  const generator = runner as { readonly generate: (job: J) => Stream.Stream<GenerationEvent, GenerationError> }
  return { _tag: "Generate", events: Stream.unwrap(Effect.map(job, generator.generate)) }
}

/** How the engine runs one kind of task; everything else about a run is shared. */
export interface Plan {
  readonly run: PlanRun
  readonly channel: ChannelSettings
  /** The result item of the spec for one stored output. */
  readonly item: (output: Output, stored: StoredOutput, index: number) => Record<string, unknown>
  readonly resultKey: "videos" | "images"
  /** What a failure the caller should not see the details of becomes. */
  readonly internalFailure: TaskFailure
  /** What transient failures become once retries are spent. */
  readonly exhaustedFailure: (last: GenerationError) => TaskFailure
  /** What an attempt's cost is made of: the route's declared cost and what the request asked for (AttemptCost.ts). */
  readonly pricing: Pricing
}

const inputFailure = (message: string) =>
  new GenerationError({ code: ImageKind.codes.failed, message, retryable: false, transient: false })

/**
 * The bytes of an input image: a stored multipart file, or a caller's URL
 * fetched like reference media (checked redirects, no private addresses
 * unless allowed, bounded in size and time).
 */
const readSource = (source: ImageSource, where: string, maxBytes: number) =>
  Effect.gen(function*() {
    if ("storageKey" in source) {
      const storage = yield* ObjectStorage
      const content = yield* storage.read(source.storageKey).pipe(
        Effect.mapError(() => inputFailure(`${where} could not be read.`))
      )
      if (Option.isNone(content)) return yield* inputFailure(`${where} is no longer stored.`)
      return yield* Stream.runCollect(content.value.body).pipe(
        Effect.map((chunks) => concatBytes(Chunk.toReadonlyArray(chunks))),
        Effect.mapError(() => inputFailure(`${where} could not be read.`))
      )
    }
    // Caller URLs go through the same fetcher as reference media: checked hops, guarded DNS, size and time caps.
    const remote = yield* RemoteMedia
    const fs = yield* FileSystem.FileSystem
    const dir = yield* fs.makeTempDirectoryScoped({ prefix: "image-input-" }).pipe(
      Effect.mapError(() => new GenerationError({ ...IMAGE_FAILURE, transient: true }))
    )
    const file = `${dir}/input`
    yield* remote.fetchToFile(source.url, { maxBytes, file }).pipe(
      Effect.mapError((e) =>
        new GenerationError({
          code: ImageKind.codes.failed,
          message: `${where} could not be fetched: ${e.message}.`,
          retryable: e.transient,
          transient: e.transient
        })
      )
    )
    return yield* fs.readFile(file).pipe(Effect.mapError(() => inputFailure(`${where} could not be read.`)))
  }).pipe(Effect.scoped)

/** The largest reference image read for an upstream that takes inline bytes (the largest such protocol takes 20 MB per request). */
const MAX_VIDEO_REFERENCE_BYTES = 10 * 1024 * 1024

const modelGone = (claim: DecodedClaim, failure: TaskFailure): TaskFailure => ({
  ...failure,
  message: `Model "${claim.model}" is no longer available.`,
  retryable: false
})

/**
 * The model's route through the task's channel with that channel's runner,
 * or undefined when the model is gone (disabled, removed) or no longer
 * routed to the channel the task was queued on.
 */
const routeOf = <K extends TaskKind>(
  claim: Claim,
  kind: K,
  served: { readonly routes: ReadonlyArray<ModelRoute> } | undefined
) =>
  Effect.gen(function*() {
    const route = served?.routes.find((r) => r.channel === claim.channel)
    if (route === undefined) return undefined
    const channels = yield* Channels
    const channel = channels.get(route.channel)!
    // Made when the engine started; a failure here is a defect, ending the task as an internal failure.
    const runner = yield* Effect.orDie(channels.runner(route.channel))
    // Where the upstream may call back, when the channel takes callbacks (only ever a hint to poll sooner).
    const callbackUrl = (yield* CallbackTokens).urlOf(route.channel)
    return {
      upstreamModel: route.upstreamModel,
      settings: channel.settings,
      runner: runner[kind],
      callbackUrl,
      cost: route.cost
    }
  })

/** What a request implies in its kind's own unit: its seconds of video, or its images. */
const requestedOf = (stored: StoredRequest): Pricing["requested"] =>
  stored.kind === "video"
    ? { unit: "second", quantity: stored.request.duration }
    : { unit: "image", quantity: stored.request.count }

/**
 * What an attempt of a task on its channel is priced by, outside a run (a
 * cancel): the route's declared cost and what the stored request asked for
 * (nothing, for a request this release cannot read).
 */
export const pricingFor = (
  registry: RegistryService,
  task: Pick<Claim, "kind" | "model" | "channel" | "request" | "requestVersion">
): Pricing => {
  const served = task.kind === "video" ? registry.video(task.model) : registry.image(task.model)
  const decoded = decodeStoredRequest(task.kind, task.requestVersion, task.request)
  return {
    cost: served?.routes.find((r) => r.channel === task.channel)?.cost,
    requested: Either.isRight(decoded)
      ? requestedOf(decoded.right)
      : { unit: task.kind === "video" ? "second" : "image", quantity: 0 }
  }
}

/** The plan for a claimed task, or the failure to end it with when its model or channel is gone. */
export const planFor = (claim: DecodedClaim) =>
  Effect.gen(function*() {
    const registry = yield* Registry

    if (claim.kind === "video") {
      const served = registry.video(claim.model)
      const route = yield* routeOf(claim, "video", served)
      if (served === undefined || route === undefined) return modelGone(claim, VIDEO_FAILURE)
      const request = claim.request as ValidVideoRequest
      const context = yield* Effect.context<ObjectStorage | RemoteMedia | FileSystem.FileSystem>()
      const readImage = (url: string, where: string) =>
        readSource({ url }, where, MAX_VIDEO_REFERENCE_BYTES).pipe(
          Effect.mapError((e) =>
            new GenerationError({
              code: VIDEO_FAILURE.code,
              message: e.message,
              retryable: e.retryable,
              transient: e.transient
            })
          ),
          Effect.provide(context)
        )
      const plan: Plan = {
        run: runOf(
          route.runner,
          route.upstreamModel,
          Effect.succeed({
            taskId: claim.id,
            capability: served.capability,
            request,
            upstreamModel: route.upstreamModel,
            readImage,
            callbackUrl: route.callbackUrl
          })
        ),
        channel: route.settings,
        pricing: { cost: route.cost, requested: requestedOf({ kind: "video", request }) },
        resultKey: "videos",
        internalFailure: VIDEO_FAILURE,
        exhaustedFailure: (last) => ({ code: last.code, message: last.message, retryable: last.retryable }),
        item: (output, stored, index) => ({
          asset_id: stored.id,
          index,
          url: stored.url,
          mime_type: output.mimeType,
          filename: stored.filename,
          ...(output.width !== undefined ? { width: output.width } : {}),
          ...(output.height !== undefined ? { height: output.height } : {}),
          // The spec: duration_ms echoes the validated requested duration, never a probe.
          duration_ms: request.duration * 1000,
          temporary: stored.temporary,
          url_auth: route.settings.url_auth
        })
      }
      return plan
    }

    const served = registry.image(claim.model)
    const route = yield* routeOf(claim, "image", served)
    if (served === undefined || route === undefined) return modelGone(claim, IMAGE_FAILURE)
    const request = claim.request as ValidImageRequest
    const maxBytes = served.capability.input_images.max_bytes
    const inputs = Effect.all({
      images: Effect.forEach(request.images, (source, i) => readSource(source, `input.images[${i}]`, maxBytes)),
      mask: request.mask === null ? Effect.succeed(null) : readSource(request.mask, "input.mask", maxBytes)
    })
    const job = Effect.map(
      inputs,
      (fetched) => ({
        taskId: claim.id,
        capability: served.capability,
        request,
        upstreamModel: route.upstreamModel,
        inputs: fetched,
        callbackUrl: route.callbackUrl
      })
    ).pipe(Effect.provide(yield* Effect.context<ObjectStorage | RemoteMedia | FileSystem.FileSystem>()))
    const plan: Plan = {
      run: runOf(route.runner, route.upstreamModel, job),
      channel: route.settings,
      pricing: { cost: route.cost, requested: requestedOf({ kind: "image", request }) },
      resultKey: "images",
      internalFailure: IMAGE_FAILURE,
      exhaustedFailure: (
        last
      ) => (last.transient ? IMAGE_UNAVAILABLE : { code: last.code, message: last.message, retryable: last.retryable }),
      item: (output, stored) => ({
        asset_id: stored.id,
        url: stored.url,
        mime_type: output.mimeType,
        format: output.format ?? output.extension,
        width: output.width ?? 0,
        height: output.height ?? 0,
        size_bytes: sizeOf(output),
        filename: stored.filename,
        url_auth: route.settings.url_auth
      })
    }
    return plan
  })
