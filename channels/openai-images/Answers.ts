import { Either, Encoding, Schema } from "effect"
import { FailureCodes, GenerationError, type Usage, usageOf } from "../../src/channel/contract/Adapter.ts"
import { retryHintMs } from "../../src/channel/contract/RetryHint.ts"

/**
 * What an OpenAI Images answer means for the task
 * (docs/adapters/openai-images.md, Answers and Failures). The caller never sees
 * the upstream's words: they may name the upstream model, the operator's
 * organisation or request ids. Operators see them in the log.
 */

const Answer = Schema.Struct({
  data: Schema.NonEmptyArray(Schema.Struct({ b64_json: Schema.String })),
  usage: Schema.optional(Schema.Unknown)
})
const decodeAnswer = Schema.decodeUnknownEither(Schema.parseJson(Answer))

const ErrorBody = Schema.Struct({
  error: Schema.Struct({
    code: Schema.optional(Schema.NullOr(Schema.String)),
    type: Schema.optional(Schema.NullOr(Schema.String))
  })
})
const decodeError = Schema.decodeUnknownOption(Schema.parseJson(ErrorBody))

const IMAGE_FAILED = FailureCodes.imageFailed
/** The spec's business code for a temporarily unavailable image service. */
const UNAVAILABLE = FailureCodes.imageUnavailable

/** Worth another try on this channel: the upstream was busy or broken for a moment. */
export const transient = (retryAfterMs?: number) =>
  new GenerationError({
    code: UNAVAILABLE,
    message: "The image service is temporarily unavailable. Create a new task to try again.",
    retryable: true,
    transient: true,
    retryAfterMs,
    // Throttled, overloaded or unreachable: nothing was made, so another channel may take the task.
    notAccepted: true
  })

/**
 * The request may have reached the upstream and been run (a time-out or a
 * dropped connection after sending). A synchronous API has no task to look
 * for, so it is not sent again: that could make the operator pay twice.
 */
export const ambiguous = new GenerationError({
  code: UNAVAILABLE,
  message: "The image service did not answer in time. Create a new task to try again.",
  retryable: true,
  transient: false,
  // Recorded as such, and counted as billed: the images may have been made and paid for.
  ambiguous: true
})

const refused = new GenerationError({
  code: IMAGE_FAILED,
  message: "The image service refused this request.",
  retryable: false,
  transient: false
})

const contentPolicy = new GenerationError({
  code: IMAGE_FAILED,
  message: "The image service's content policy refused this prompt or its result.",
  retryable: false,
  transient: false
})

/** The upstream refuses this channel's credentials or model: not the caller's fault, and not fixed by retrying here. */
const misconfigured = new GenerationError({
  code: UNAVAILABLE,
  message: "The image service is temporarily unavailable. Create a new task to try again.",
  retryable: true,
  transient: false,
  notAccepted: true
})

/**
 * A 200 that is not the documented answer: worth asking again, but the
 * upstream did run the request, so it is not a reason to go to another channel.
 */
const brokenAnswer = () =>
  new GenerationError({
    code: UNAVAILABLE,
    message: "The image service is temporarily unavailable. Create a new task to try again.",
    retryable: true,
    transient: true
  })

/**
 * What the answer says the request used (docs/adapters/openai-images.md,
 * Usage and billing): GPT image models bill tokens, and `usage.total_tokens`
 * counts them all (text and image input, image output), each kind kept beside.
 */
const usageIn = (usage: unknown): Usage | undefined =>
  typeof usage === "object" && usage !== null
    ? usageOf("token", (usage as { total_tokens?: unknown }).total_tokens, usage as Record<string, unknown>)
    : undefined

/** The images of a 200 answer and the usage it reports, or why there are none. */
export const readImages = (
  text: string
): Either.Either<{ readonly images: ReadonlyArray<Uint8Array>; readonly usage: Usage | undefined }, GenerationError> =>
  decodeAnswer(text).pipe(
    // A 200 that is not the documented answer is a broken upstream moment, like a 502.
    Either.mapLeft(() => brokenAnswer()),
    Either.flatMap((answer) =>
      Either.all(answer.data.map((item) => Either.mapLeft(Encoding.decodeBase64(item.b64_json), () => brokenAnswer())))
        .pipe(Either.map((images) => ({ images, usage: usageIn(answer.usage) })))
    )
  )

/** A non-2xx answer as the task's failure. */
export const failureOf = (
  status: number,
  headers: Readonly<Record<string, string | undefined>>,
  text: string
): GenerationError => {
  const body = decodeError(text)
  const code = body._tag === "Some" ? body.value.error.code : undefined
  if (code === "moderation_blocked" || code === "content_policy_violation") return contentPolicy
  if (status === 408 || status === 409 || status === 429 || status >= 500) {
    let parsed: unknown
    try {
      parsed = JSON.parse(text)
    } catch {
      parsed = undefined
    }
    return transient(retryHintMs(headers, parsed))
  }
  if (status === 401 || status === 403 || status === 404) return misconfigured
  return refused
}
