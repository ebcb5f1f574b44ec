import type { CommandExecutor, FileSystem, HttpClient, Path } from "@effect/platform"
import { Schema } from "effect"
import type { Effect, Scope } from "effect"
import { OptionField } from "../../catalog/contract/Capabilities.ts"
import type { MediaTools } from "../../platform/MediaTools.ts"
import type { UpstreamCallbacks } from "./Callbacks.ts"
import type { ChannelSettings } from "./ChannelSettings.ts"
import type { ChannelCheck } from "./Check.ts"
import type { ImageGenerator, VideoGenerator } from "./Generation.ts"
import type { ImageUpstream, VideoUpstream } from "./Upstream.ts"
import type { UsageUnit } from "./Usage.ts"

/**
 * The channel adapter contract (docs/adapters/README.md, Writing an adapter).
 * An adapter is a folder of `channels/` (or any folder config points at) whose
 * default export is `defineAdapter({...})`; a channel is a configured instance
 * of one. The core loads adapters by name (Channels.ts) and never imports one,
 * so an adapter imports only this contract and the platform ports.
 */

export * from "./Callbacks.ts"
export * from "./ChannelSettings.ts"
export * from "./Check.ts"
export {
  answerDetail,
  channelWarning,
  exchange,
  providerExchange,
  readAnswer,
  type UpstreamAnswer
} from "./Exchange.ts"
export { FailureCodes } from "./FailureCodes.ts"
export * from "./Generation.ts"
export { retryHintMs } from "./RetryHint.ts"
export { verifyStandardWebhook } from "./StandardWebhooks.ts"
export { certainlyNotSent } from "./Transport.ts"
export * from "./Upstream.ts"
export * from "./Usage.ts"

export const TaskKind = Schema.Literal("video", "image")
export type TaskKind = typeof TaskKind.Type

/**
 * `provider_options` namespaces and their fields, in the shape of a plugin's
 * capability table, added to every model routed to a channel of the adapter.
 */
export const ProviderOptions = Schema.Record({
  key: Schema.String,
  value: Schema.Record({ key: Schema.String, value: OptionField })
})
export type ProviderOptions = typeof ProviderOptions.Type

/**
 * What a runner of each kind does: generate in this process (`generate` → a
 * stream of progress and outputs), or drive an asynchronous upstream
 * (`submit`, `poll`, `fetchResult`, optional `find`; Upstream.ts).
 */
export interface KindRunners {
  readonly video: VideoGenerator | VideoUpstream
  readonly image: ImageGenerator | ImageUpstream
}

/** A channel's runner: one entry per kind its adapter serves. */
export type ChannelRunner<K extends TaskKind = TaskKind> = { readonly [k in K]: KindRunners[k] }

/**
 * The platform ports an adapter may use, all provided by the runtime: files,
 * paths, child processes (with MediaTools saying where ffmpeg is) and a
 * plain HTTP client for operator-configured upstreams.
 */
export type ChannelPorts =
  | FileSystem.FileSystem
  | Path.Path
  | CommandExecutor.CommandExecutor
  | HttpClient.HttpClient
  | MediaTools

/**
 * One configured channel as its adapter's `make` receives it: settings
 * decoded (`base_url` without its trailing slashes, HttpUrl), secrets
 * resolved, and its warning log, which names the channel on every line.
 */
export interface Channel<S> {
  readonly name: string
  readonly settings: ChannelSettings & S
  /** A warning in the log, annotated with the channel's name (and `annotations`). */
  readonly warn: ChannelWarning
}

/** How an adapter logs a warning of its channel (`Channel.warn`). */
export type ChannelWarning = (message: string, annotations?: Record<string, unknown>) => Effect.Effect<void>

export interface ChannelAdapter<K extends TaskKind = TaskKind, S = unknown> {
  readonly _tag: "ChannelAdapter"
  /** For logs and errors; config names the adapter by folder. */
  readonly name: string
  readonly kinds: ReadonlyArray<K>
  /** The adapter's own settings, beside the common ones; unknown keys are refused at boot. */
  readonly settings: Schema.Schema<S, any>
  readonly providerOptions: { readonly [k in K]?: ProviderOptions }
  /**
   * Builds the channel's runner once, when the engine starts; resources it
   * opens live as long as the engine (the Scope).
   */
  readonly make: (channel: Channel<S>) => Effect.Effect<ChannelRunner<K>, never, ChannelPorts | Scope.Scope>
  /**
   * For a protocol that can call back (Callbacks.ts): reads the callbacks of
   * one channel. Pure (no ports), because the API role, which receives
   * callbacks, never makes runners. A channel turns callbacks on with
   * `callbacks: true`; its jobs then carry `callbackUrl`.
   */
  readonly callbacks?: ((channel: Channel<S>) => UpstreamCallbacks) | undefined
  /**
   * One free, harmless upstream call (a list or get-model style request)
   * that proves the upstream is reachable and takes the channel's
   * credentials; where the provider can say which models it serves, also
   * whether it serves `routed` (the `upstream_model` of every route to the
   * channel, each once): `model_not_found_upstream` naming the ones it does
   * not. Never fails: what went wrong is the result.
   */
  readonly check?:
    | ((channel: Channel<S>, routed: ReadonlyArray<string>) => Effect.Effect<ChannelCheck, never, ChannelPorts>)
    | undefined
  /**
   * For an adapter that serves only the upstream models it knows (a
   * marketplace's endpoints, each with its own input): whether it can serve a
   * model routed to one of its channels. A message (naming what it knows)
   * stops the boot, so a route to an unknown endpoint never reaches a task.
   */
  readonly checkRoute?: ((channel: Channel<S>, route: RouteToCheck) => string | undefined) | undefined
  /**
   * For an adapter that knows what the upstream a route names cannot take or
   * always does (a marketplace endpoint's durations, ratios, soundtrack and
   * frames, from its endpoint table): those limits, the route's defaults. The
   * catalog keeps a request off a route whose limits refuse it (a 400 at
   * creation when no route of the model takes it, never a failed task), and
   * a route's `narrower` may narrow them further, never widen them.
   * Undefined: the upstream takes whatever the model's table allows.
   */
  readonly routeLimits?: ((channel: Channel<S>, route: RouteToCheck) => UpstreamLimits | undefined) | undefined
  /**
   * The units the provider's answers report usage in, per kind, beyond the
   * ones the engine can always count itself (seconds of video, images, tasks):
   * `token` where the provider bills tokens (Usage.ts). A route whose `cost`
   * is priced in a unit neither counts stops the boot.
   */
  readonly usageUnits?: { readonly [k in K]?: ReadonlyArray<UsageUnit> } | undefined
}

/** One route of a model to a channel, as an adapter's `checkRoute` sees it. */
export interface RouteToCheck {
  /** The public model id. */
  readonly model: string
  /** Its plugin's family (`famS`, `image`…). */
  readonly family: string
  readonly kind: TaskKind
  /** The route's `upstream_model` (the public id by default). */
  readonly upstreamModel: string
}

/**
 * What one route's upstream cannot take or always does, as its adapter knows
 * it (`routeLimits`). Each member left out means no limit of that kind.
 */
export interface UpstreamLimits {
  /** The video lengths it takes, in seconds. */
  readonly durations?: ReadonlyArray<number> | undefined
  /** The aspect ratios it takes (`16:9`…). */
  readonly aspectRatios?: ReadonlyArray<string> | undefined
  /** The resolutions it makes (`720p`…): a model of another resolution cannot be routed there (the start stops). */
  readonly resolutions?: ReadonlyArray<string> | undefined
  /** `never`: its videos are silent, whatever is asked; `always`: they always have a soundtrack. */
  readonly audio?: "never" | "always" | undefined
  /** false: it takes no last frame (a first frame only). */
  readonly lastFrame?: boolean | undefined
  /** `required`: it takes no request without a first frame (an image-to-video-only model). */
  readonly firstFrame?: "required" | undefined
}

/** An adapter of any kinds and settings, as the loader holds them. */
export type AnyAdapter = ChannelAdapter<TaskKind, any>

/** The default export of an adapter module. */
export const defineAdapter = <const K extends TaskKind, S>(
  adapter: Omit<ChannelAdapter<K, S>, "_tag">
): ChannelAdapter<K, S> => ({ _tag: "ChannelAdapter", ...adapter })

/** Whether a module's default export looks like `defineAdapter(...)`; the rest is checked by Channels. */
export const isAdapter = (value: unknown): value is AnyAdapter =>
  typeof value === "object" && value !== null &&
  (value as AnyAdapter)._tag === "ChannelAdapter" &&
  typeof (value as AnyAdapter).name === "string" &&
  Array.isArray((value as AnyAdapter).kinds) &&
  Schema.isSchema((value as AnyAdapter).settings) &&
  typeof (value as AnyAdapter).make === "function" &&
  ((value as AnyAdapter).callbacks === undefined || typeof (value as AnyAdapter).callbacks === "function") &&
  ((value as AnyAdapter).check === undefined || typeof (value as AnyAdapter).check === "function") &&
  ((value as AnyAdapter).checkRoute === undefined || typeof (value as AnyAdapter).checkRoute === "function") &&
  ((value as AnyAdapter).routeLimits === undefined || typeof (value as AnyAdapter).routeLimits === "function")
