import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { ModelKeyAuth } from "../accounts/Security.ts"
import { InvalidRequest, UnsupportedModel } from "../catalog/Errors.ts"
import { VideoCreateRequest } from "../catalog/VideoCreateRequest.ts"
import { BodyErrors, errors } from "../platform/http/ErrorContract.ts"
import { jsonBody } from "../platform/http/OpenApiBody.ts"
import { ImageInputErrors, imageTaskBody } from "./Api.ts"
import { InvalidTaskRequest } from "./Errors.ts"

const Credits = Schema.Number

/** What a create with this body would charge, and whether the caller's balances cover it now. */
export const TaskQuote = Schema.Struct({
  object: Schema.Literal("task.quote"),
  model: Schema.String,
  operation: Schema.String,
  billing: Schema.Struct({
    unit: Schema.Literal("second", "image"),
    quantity: Schema.Number,
    unit_price: Credits,
    multiplier: Schema.Number,
    credits: Credits
  }),
  charge: Schema.Struct({ wallet: Credits, subscription: Credits }),
  balance: Schema.Struct({ wallet: Credits, subscription: Credits }),
  enough_balance: Schema.Boolean,
  /** The account's queued tasks against its group's `max_queued`; `room` false: a create would answer 429. */
  queue: Schema.Struct({ queued: Schema.Number, max_queued: Schema.NullOr(Schema.Number), room: Schema.Boolean }),
  /** The key's spend today and this month (UTC) against its limits; `room` false: a create would answer 429. */
  spend: Schema.Struct({
    spent_today: Credits,
    spent_this_month: Credits,
    daily_limit: Schema.NullOr(Credits),
    monthly_limit: Schema.NullOr(Credits),
    room: Schema.Boolean
  })
})

/** A quote refuses what the create refuses, with the same codes; a balance that cannot pay is not among them. */
const QuoteErrors = errors(InvalidRequest, UnsupportedModel, InvalidTaskRequest)

/**
 * Quotes: the create's body at `…/tasks/quote`, with a model token; nothing
 * is created or charged, and no Idempotency-Key is read.
 */
export class TaskQuoteApi extends HttpApiGroup.make("taskQuote")
  .add(
    HttpApiEndpoint.post("quoteVideoTask", "/v1/video/tasks/quote").addSuccess(TaskQuote)
      .addError(BodyErrors).addError(QuoteErrors)
      .annotate(OpenApi.Override, jsonBody(VideoCreateRequest))
  )
  .add(
    HttpApiEndpoint.post("quoteImageTask", "/v1/image/tasks/quote").addSuccess(TaskQuote)
      .addError(BodyErrors).addError(QuoteErrors).addError(ImageInputErrors)
      .annotate(OpenApi.Override, imageTaskBody)
  )
  .middleware(ModelKeyAuth)
  .annotate(OpenApi.Title, "Task quotes")
{}
