import type { HttpClient } from "@effect/platform"
import { HttpClientRequest } from "@effect/platform"
import { Duration, Effect } from "effect"
import { answerDetail, type ChannelCheck, readAnswer } from "../../src/channel/contract/Adapter.ts"
import { retirementNote } from "./Models.ts"
import type { Api } from "./Requests.ts"

/**
 * The channel check's second half (docs/adapters/veo.md, Check): each
 * upstream model the channel's routes name, and any its `check_models`
 * adds, asked for by id once the credentials proved good.
 *
 * - Gemini: `GET {base}/models/{m}`; a 200 whose `supportedGenerationMethods`
 *   holds `predictLongRunning` is served, a 404 (Google's answer for an
 *   unknown or shut-down model) or a model without that method is not.
 * - Vertex: `GET {base}/publishers/google/models/{m}`; a 200 is served, a
 *   404 is not.
 *
 * Any model not served makes the check `model_not_found_upstream`, its
 * detail naming the ids, what this adapter knows of them (Models.ts), and
 * Google's own words. Free, changes nothing.
 */

export const MODEL_NOT_FOUND = "model_not_found_upstream" as const

interface Finding {
  readonly model: string
  readonly served: boolean
  readonly words: string
  readonly answer?: ReturnType<typeof answerDetail> | undefined
}

const methodsOf = (body: unknown): ReadonlyArray<unknown> | undefined => {
  const methods = (body as { supportedGenerationMethods?: unknown } | null)?.supportedGenerationMethods
  return Array.isArray(methods) ? methods : undefined
}

const askOne = (
  client: HttpClient.HttpClient,
  api: Api,
  request: HttpClientRequest.HttpClientRequest,
  what: string,
  model: string,
  seconds: number
): Effect.Effect<Finding> =>
  client.execute(request).pipe(
    Effect.flatMap((response) => readAnswer(response)),
    Effect.timeoutFail({
      duration: Duration.seconds(seconds),
      onTimeout: () => ({ message: `no answer in ${seconds} s` })
    }),
    Effect.map((answer): Finding => {
      const detail = answerDetail(answer)
      const said = [detail.code, detail.message].filter((s) => s !== undefined && s !== "").join(": ")
      const words = `${what}: HTTP ${answer.status}${said === "" ? "" : ` ${said}`}`
      if (answer.status === 404) {
        return { model, served: false, words: `${model} (${retirementNote(api, model)}; ${words})`, answer: detail }
      }
      if (answer.status !== 200) return { model, served: false, words: `${model} (${words})`, answer: detail }
      const methods = methodsOf(answer.body)
      if (api === "gemini" && methods !== undefined && !methods.includes("predictLongRunning")) {
        return {
          model,
          served: false,
          words: `${model} (served, but not for predictLongRunning: ${methods.join(", ")})`,
          answer: detail
        }
      }
      return { model, served: true, words: `${what}: HTTP 200` }
    }),
    Effect.catchAll((e) => Effect.succeed<Finding>({ model, served: false, words: `${model} (${what}: ${e.message})` }))
  )

/** The check of every model named, or the credentials' check as it was when there are none or it failed. */
export const checkModels = (
  client: HttpClient.HttpClient,
  first: ChannelCheck,
  options: {
    readonly api: Api
    readonly base: string
    readonly models: ReadonlyArray<string>
    readonly seconds: number
    readonly authorize: (request: HttpClientRequest.HttpClientRequest) => HttpClientRequest.HttpClientRequest
  }
): Effect.Effect<ChannelCheck> =>
  Effect.gen(function*() {
    if (first.result !== "ok" || options.models.length === 0) return first
    const findings = yield* Effect.forEach(options.models, (model) => {
      const path = options.api === "gemini" ? `models/${model}` : `publishers/google/models/${model}`
      return askOne(
        client,
        options.api,
        options.authorize(HttpClientRequest.get(`${options.base}/${path}`)),
        `GET /${path}`,
        model,
        options.seconds
      )
    })
    const missing = findings.filter((f) => !f.served)
    if (missing.length === 0) {
      return { result: "ok", detail: `${first.detail}; models served: ${options.models.join(", ")}` }
    }
    return {
      result: MODEL_NOT_FOUND,
      detail: `${MODEL_NOT_FOUND}: ${missing.map((f) => f.words).join("; ")}`,
      upstream: missing.find((f) => f.answer !== undefined)?.answer
    }
  })
