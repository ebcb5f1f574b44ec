import { Context, Effect, Layer, ParseResult, Schema } from "effect"
import type { ModelSettings } from "../domain/Settings.ts"
import { VideoFamily, type VideoModelCapability } from "../plugin/Capabilities.ts"
import { AppConfig, ConfigurationError } from "./AppConfig.ts"

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

/** A model as the gateway serves it: the plugin's capabilities with the operator's settings. */
export interface ServedVideoModel {
  readonly family: string
  readonly ownedBy: string
  readonly capability: VideoModelCapability
  readonly settings: ModelSettings
}

export interface RegistryService {
  readonly families: ReadonlyArray<VideoFamily>
  /** An enabled video model by public ID. */
  readonly video: (id: string) => ServedVideoModel | undefined
  readonly videoModels: ReadonlyArray<ServedVideoModel>
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
    return yield* Schema.decodeUnknown(VideoFamily, { onExcessProperty: "error", errors: "all" })(module.default).pipe(
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
      const declared = new Set<string>()
      for (const family of families) {
        for (const capability of family.models) {
          if (declared.has(capability.id)) {
            return yield* new ConfigurationError({ message: `model "${capability.id}" is declared by two plugins` })
          }
          declared.add(capability.id)
          const settings = models.models[capability.id]
          if (settings?.enabled) {
            const routed = settings.generator === "sandbox"
              ? { ...capability, provider_options: { ...capability.provider_options, ...SANDBOX_OPTIONS } }
              : capability
            served.set(capability.id, { family: family.family, ownedBy: family.owned_by, capability: routed, settings })
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
        videoModels: [...served.values()]
      }
    })
  )
}
