import type { Deprecation } from "../platform/Settings.ts"
import { UnsupportedModel, type UnsupportedModelCode } from "./Errors.ts"
import type { RegistryService } from "./Registry.ts"

/** What a create learns of its model's lifecycle: the model that serves it, and its deprecation, if any. */
export interface ModelLifecycle {
  /** The model the request's id names (an alias's target). */
  readonly model: string | undefined
  readonly deprecation: Deprecation | undefined
}

const day = (seconds: number) => new Date(seconds * 1000).toISOString().slice(0, 10)

/**
 * A create's model as its lifecycle has it (docs/api.md, Model lifecycle):
 * an alias is read as the model it names; a deprecated model is served
 * until its sunset, then refused with `unsupported_*_model` naming its
 * successor, before anything is charged. `now` in seconds.
 */
export const lifecycleOf = (
  registry: RegistryService,
  kind: "video" | "image",
  requested: unknown,
  now: number
): ModelLifecycle | UnsupportedModel => {
  if (typeof requested !== "string") return { model: undefined, deprecation: undefined }
  const model = registry.resolve(requested)
  const served = kind === "video" ? registry.video(model) : registry.image(model)
  const deprecation = served?.settings.deprecated
  if (deprecation !== undefined && now >= deprecation.sunset) {
    const code: UnsupportedModelCode = kind === "video" ? "unsupported_video_model" : "unsupported_image_model"
    const instead = deprecation.successor === undefined ? "" : `; use "${deprecation.successor}" instead`
    return new UnsupportedModel({
      code,
      message: `The model "${requested}" was retired on ${day(deprecation.sunset)}${instead}.`
    })
  }
  return { model, deprecation }
}

/** A request body with its model id replaced by the model it names (an alias's target); others as they are. */
export const withModel = <B>(body: B, model: string | undefined): B =>
  model === undefined || typeof body !== "object" || body === null || (body as { model?: unknown }).model === model
    ? body
    : { ...body, model }
