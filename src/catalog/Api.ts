import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { AnyKeyAuth } from "../accounts/Security.ts"
import { errors } from "../platform/http/ErrorContract.ts"
import { VideoModelCapability } from "./contract/Capabilities.ts"
import { ImageModelCapability } from "./contract/ImageCapabilities.ts"
import { UnsupportedModel } from "./Errors.ts"

const { id: _id, ...videoFields } = VideoModelCapability.fields
const { id: _imageId, ...imageFields } = ImageModelCapability.from.fields

export const Model = Schema.Struct({
  id: Schema.String,
  object: Schema.Literal("model"),
  type: Schema.Literal("video", "image"),
  family: Schema.String,
  owned_by: Schema.String,
  capabilities: Schema.Union(Schema.Struct(videoFields), Schema.Struct(imageFields)),
  pricing: Schema.Struct({
    unit: Schema.Literal("second", "image"),
    currency: Schema.Literal("credit"),
    price: Schema.Number,
    /** The caller's group multiplier applied. */
    effective_price: Schema.Number,
    group: Schema.String,
    group_multiplier: Schema.Number,
    subscription_allowed: Schema.Boolean
  }),
  /** On its way out (docs/api.md, Model lifecycle): Unix seconds, and the model to move to; absent otherwise. */
  deprecation: Schema.optional(Schema.Struct({
    since: Schema.Number,
    sunset: Schema.Number,
    successor: Schema.NullOr(Schema.String)
  })),
  /** For an alias: the model it names, whose capabilities and pricing it shows. */
  alias_of: Schema.optional(Schema.String)
})

export class ModelsApi extends HttpApiGroup.make("models")
  .add(
    HttpApiEndpoint.get("listModels", "/v1/models")
      .addSuccess(Schema.Struct({ object: Schema.Literal("list"), data: Schema.Array(Model) }))
  )
  .add(
    HttpApiEndpoint.get("getModel", "/v1/models/:model").setPath(Schema.Struct({ model: Schema.String }))
      .addSuccess(Model).addError(errors(UnsupportedModel))
  )
  .middleware(AnyKeyAuth)
  .annotate(OpenApi.Title, "Models")
  .annotate(OpenApi.Description, "Every enabled model with its capabilities and pricing; either key kind")
{}
