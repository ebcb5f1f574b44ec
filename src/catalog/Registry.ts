import { Context, Effect, Either, Layer, ParseResult, Schema } from "effect"
import { Channels } from "../channel/Channels.ts"
import { AppConfig, ConfigurationError } from "../platform/AppConfig.ts"
import { loadExtension } from "../platform/Extensions.ts"
import { type ModelRoute, modelRoutes, type ModelSettings } from "../platform/Settings.ts"
import { VideoFamily, type VideoModelCapability } from "./contract/Capabilities.ts"
import { ImageFamily, type ImageModelCapability } from "./contract/ImageCapabilities.ts"
import type { ImageModelRules } from "./ImageRequest.ts"
import { narrowRoute, type RouteLimits } from "./Narrower.ts"
import { checkRoutes } from "./RouteChecks.ts"
import { routedOptions } from "./RoutedOptions.ts"

/** A model as the gateway serves it: the plugin's capabilities with the operator's settings. */
export interface ServedModel<C> {
  readonly family: string
  readonly ownedBy: string
  readonly capability: C
  readonly settings: ModelSettings
  /**
   * Its channels in failover order, checked to serve its kind; a video route
   * narrower than the model (its `narrower`, or what its adapter knows of the
   * upstream: Narrower.ts) carries the capability it takes and its limits.
   */
  readonly routes: ReadonlyArray<ModelRoute & { readonly capability?: C; readonly limits?: RouteLimits }>
  /** Credits per unit (second of video, or image) before the group multiplier. */
  readonly price: number
}
export type ServedVideoModel = ServedModel<VideoModelCapability>
/** Image tables carry no `provider_options`; its channels' adapters add what they accept. */
export type ServedImageModel = ServedModel<ImageModelCapability> & ImageModelRules

export interface RegistryService {
  readonly families: ReadonlyArray<VideoFamily | ImageFamily>
  /** An enabled video model by public ID. */
  readonly video: (id: string) => ServedVideoModel | undefined
  readonly videoModels: ReadonlyArray<ServedVideoModel>
  /** An enabled image model by public ID. */
  readonly image: (id: string) => ServedImageModel | undefined
  readonly imageModels: ReadonlyArray<ServedImageModel>
  /** The model an id names: an alias's target (`aliases` in models.json), else the id itself. */
  readonly resolve: (id: string) => string
  /** Every alias and the model it names. */
  readonly aliases: ReadonlyMap<string, string>
}

const BUILTIN_PLUGINS = new URL("../../plugins/", import.meta.url)

/**
 * Loads a plugin `config/models.json` names, by folder (Extensions.ts), so
 * the core never imports a family: a new family is a folder and a config line.
 */
const loadPlugin = (ref: string, index: number) =>
  Effect.gen(function*() {
    const exported = yield* loadExtension(ref, BUILTIN_PLUGINS, "plugin", `plugins[${index}]`)
    const schema = (exported as { type?: unknown })?.type === "image" ? ImageFamily : VideoFamily
    return yield* Schema.decodeUnknown(schema as Schema.Schema<VideoFamily | ImageFamily, unknown>, {
      onExcessProperty: "error",
      errors: "all"
    })(exported).pipe(
      Effect.mapError((e) =>
        new ConfigurationError({
          message: `plugin "${ref}": invalid capability table\n${ParseResult.TreeFormatter.formatErrorSync(e)}`
        })
      )
    )
  })

export class Registry extends Context.Tag("Registry")<Registry, RegistryService>() {
  static readonly layer = Layer.effect(
    Registry,
    Effect.gen(function*() {
      const { models } = yield* AppConfig
      const channels = yield* Channels
      const families = yield* Effect.forEach(models.plugins, (ref, i) => loadPlugin(ref, i))
      const served = new Map<string, ServedVideoModel>()
      const servedImages = new Map<string, ServedImageModel>()
      const declared = new Set<string>()
      for (const family of families) {
        for (const capability of family.models) {
          if (declared.has(capability.id)) {
            return yield* new ConfigurationError({ message: `model "${capability.id}" is declared by two plugins` })
          }
          declared.add(capability.id)
          const settings = models.models[capability.id]
          if (!settings?.enabled) continue
          const priceField = family.type === "video" ? "price_per_second" : "price_per_image"
          const price = settings[priceField]
          if (price === undefined) {
            return yield* new ConfigurationError({
              message: `config models.json: at models.${capability.id}: ${family.type} model needs "${priceField}"`
            })
          }
          const routes = modelRoutes(capability.id, settings, models.channels)
          const common = { family: family.family, ownedBy: family.owned_by, settings, routes, price }
          if (family.type === "image") {
            const providerOptions = yield* routedOptions(channels, capability.id, "image", {}, routes)
            yield* checkRoutes(channels, capability.id, family.family, "image", routes)
            servedImages.set(capability.id, {
              ...common,
              capability: capability as ImageModelCapability,
              providerOptions
            })
          } else {
            const video = capability as VideoModelCapability
            const options = yield* routedOptions(channels, capability.id, "video", video.provider_options, routes)
            yield* checkRoutes(channels, capability.id, family.family, "video", routes)
            const full = { ...video, provider_options: options }
            const narrowed = yield* Effect.forEach(routes, (route) => {
              const channel = channels.get(route.channel)!
              const upstream = channel.adapter.routeLimits?.(channel, {
                model: capability.id,
                family: family.family,
                kind: "video",
                upstreamModel: route.upstreamModel
              })
              return narrowRoute(full, upstream, route.narrower).pipe(
                Either.match({
                  onRight: (narrow) => Effect.succeed(narrow === undefined ? route : { ...route, ...narrow }),
                  onLeft: (why) =>
                    new ConfigurationError({
                      message: `config models.json: at models.${capability.id}, channel "${route.channel}": ${why}`
                    })
                })
              )
            })
            served.set(capability.id, { ...common, routes: narrowed, capability: full })
          }
        }
      }
      const unknown = Object.keys(models.models).filter((id) => !declared.has(id))
      if (unknown.length > 0) {
        return yield* new ConfigurationError({
          message: `config models.json: models not declared by any loaded plugin: ${unknown.join(", ")}`
        })
      }
      const aliases = new Map(Object.entries(models.aliases))
      return {
        families,
        resolve: (id) => aliases.get(id) ?? id,
        aliases,
        video: (id) => served.get(id),
        videoModels: [...served.values()],
        image: (id) => servedImages.get(id),
        imageModels: [...servedImages.values()]
      }
    })
  )
}
