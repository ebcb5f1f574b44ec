import { HttpApiBuilder } from "@effect/platform"
import { Effect, Layer, Schema } from "effect"
import { ModelKeyAuthLive } from "../accounts/Auth.ts"
import { CurrentPrincipal } from "../accounts/Security.ts"
import { GatewayApi } from "../Api.ts"
import { readJson } from "../platform/http/Body.ts"
import { imageSubmission } from "./ImageFormHttp.ts"
import { Quotes } from "./Quotes.ts"

const quoteVideo = Effect.gen(function*() {
  const principal = yield* CurrentPrincipal
  const body = yield* readJson(Schema.Unknown)
  return yield* (yield* Quotes).quoteVideo(principal, body)
})

const quoteImage = Effect.gen(function*() {
  const principal = yield* CurrentPrincipal
  const submission = yield* imageSubmission(principal.accountId)
  return yield* (yield* Quotes).quoteImage(principal, submission)
})

export const TaskQuoteLive = HttpApiBuilder.group(GatewayApi, "taskQuote", (handlers) =>
  handlers
    .handle("quoteVideoTask", () => quoteVideo)
    .handle("quoteImageTask", () => quoteImage)).pipe(
    Layer.provide(ModelKeyAuthLive)
  )
