import { Context, Effect, Layer, ParseResult, Schema } from "effect"
import type { ModelSettings } from "../platform/Settings.ts"
import { VideoFamily, type VideoModelCapability } from "./Capabilities.ts"
import { ImageFamily, type ImageModelCapability } from "./ImageCapabilities.ts"
import type { ImageModelRules } from "./ImageRequest.ts"
import { AppConfig, ConfigurationError } from "../platform/AppConfig.ts"

/**
 * The sandbox's per-request switch (DESIGN.md, Generators), like a payment
 * provider's test cards. Only models routed to the sandbox accept it.
 */
const SANDBOX_OPTIONS: VideoModelCapability["provider_options"] = {
  sandbox: {
    outcome: { type: "string", enum: ["succeed", "fail"] },
    delay_ms: { type: "integer", min: 0, max: 600_000 }
  }
}

/** Images may also rehearse a temporarily unavailable service (a failed task with code 524). */
const SANDBOX_IMAGE_OPTIONS: VideoModelCapability["provider_options"] = {
  sandbox: {
    outcome: { type: "string", enum: ["succeed", "fail", "unavailable"] },
    delay_ms: { type: "integer", min: 0, max: 600_000 }
  }
}

/** A model as the gateway serves it: the plugin's capabilities with the operator's settings. */
export interface ServedModel<C> {
  readonly family: string
  readonly ownedBy: string
  readonly capability: C
  readonly settings: ModelSettings
  /** Credits per unit (second of video, or image) before the group multiplier. */
  readonly price: number
}
export type ServedVideoModel = ServedModel<VideoModelCapability>
/** Image tables carry no `provider_options`; the channel adds what it accepts (the sandbox's switch). */
export type ServedImageModel = ServedModel<ImageModelCapability> & ImageModelRules

export interface RegistryService {
  readonly families: ReadonlyArray<VideoFamily | ImageFamily>
  /** An enabled video model by public ID. */
  readonly video: (id: string) => ServedVideoModel | undefined
  readonly videoModels: ReadonlyArray<ServedVideoModel>
  /** An enabled image model by public ID. */
  readonly image: (id: string) => ServedImageModel | undefined
  readonly imageModels: ReadonlyArray<ServedImageModel>
}

/**
 * Loads the plugins `config/models.json` names, by folder, so the core never
 * imports a family: a new family is a folder in `plugins/` and a line in config.
 */
const loadPlugin = (name: string) =>
  Effect.gen(function*() {
    const module = yield* Effect.tryPromise({
      try: () => import(new URL(`../../plugins/${name}/index.ts`, import.meta.url).href),
      catch: (e) => new ConfigurationError({ message: `plugin "${name}": cannot be loaded (${(e as Error).message})` })
    })
    const schema = (module.default as { type?: unknown })?.type === "image" ? ImageFamily : VideoFamily
    return yield* Schema.decodeUnknown(schema as Schema.Schema<VideoFamily | ImageFamily, unknown>, {
      onExcessProperty: "error",
      errors: "all"
    })(module.default).pipe(
      Effect.mapError((e) =>
        new ConfigurationError({
          message: `plugin "${name}": invalid capability table\n${ParseResult.TreeFormatter.formatErrorSync(e)}`
        })
      )
    )
  })

export class Registry extends Context.Tag("Registry")<Registry, RegistryService>() {
  static readonly layer = Layer.effect(
    Registry,
    Effect.gen(function*() {
      const { models } = yield* AppConfig
      const families = yield* Effect.forEach(models.plugins, loadPlugin)
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
          const common = { family: family.family, ownedBy: family.owned_by, settings, price }
          if (family.type === "image") {
            servedImages.set(capability.id, {
              ...common,
              capability: capability as ImageModelCapability,
              providerOptions: settings.generator === "sandbox" ? SANDBOX_IMAGE_OPTIONS : {}
            })
          } else {
            const video = capability as VideoModelCapability
            const routed = settings.generator === "sandbox"
              ? { ...video, provider_options: { ...video.provider_options, ...SANDBOX_OPTIONS } }
              : video
            served.set(capability.id, { ...common, capability: routed })
          }
        }
      }
      const unknown = Object.keys(models.models).filter((id) => !declared.has(id))
      if (unknown.length > 0) {
        return yield* new ConfigurationError({
          message: `config models.json: models not declared by any loaded plugin: ${unknown.join(", ")}`
        })
      }
      return {
        families,
        video: (id) => served.get(id),
        videoModels: [...served.values()],
        image: (id) => servedImages.get(id),
        imageModels: [...servedImages.values()]
      }
    })
  )
}
