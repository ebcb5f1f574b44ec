import { HttpApiBuilder, HttpRouter, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Clock, Effect } from "effect"
import { CALLBACK_PATH, CallbackTokens } from "../channel/CallbackTokens.ts"
import type { AppConfig } from "../platform/AppConfig.ts"
import { readBytes } from "../platform/http/Body.ts"
import { notFound } from "../platform/http/HttpFailure.ts"
import { TaskQueue } from "../tasks/engine/TaskQueue.ts"
import { CallbackNotTaken, InvalidCallback } from "./Errors.ts"

/** A callback is a task object or a status note: far below this. */
const MAX_CALLBACK_BYTES = 256 * 1024
/** Upstreams wait a few seconds for an answer (Ark: 5 s), then send again. */
const ANSWER_WITHIN = "4 seconds"

/**
 * `POST /v1/upstream-callbacks/{token}`: an upstream's status callback
 * (channel/Callbacks.ts). The token names the channel (CallbackTokens.ts);
 * any other token is answered exactly as a path with no route, and reads
 * nothing. The channel's adapter checks what it can (a signature, its
 * freshness) and names the tasks; those waiting on that channel are polled
 * now. What the callback says about their state is never used: the poll
 * decides, so a forged, repeated or lying callback only moves a poll
 * earlier. Not part of the public contract (no OpenAPI entry): upstreams,
 * not callers, use it.
 */
const receive = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  const { token } = yield* HttpRouter.params
  const found = (yield* CallbackTokens).channelOf(token ?? "")
  // Exactly the answer of a path with no route (platform/http/Middleware.ts): a token reveals nothing.
  if (found === undefined) {
    return yield* notFound("not_found", `No route for POST ${request.url.split("?")[0]}.`)
  }
  const body = yield* readBytes(MAX_CALLBACK_BYTES)
  const now = yield* Clock.currentTimeMillis
  const hint = yield* found.callbacks.read({ headers: request.headers, body, now }).pipe(
    Effect.tapError((e) =>
      Effect.logWarning("an upstream callback was refused").pipe(
        Effect.annotateLogs({ channel: found.channel.name, reason: e.reason })
      )
    ),
    Effect.mapError(() => new InvalidCallback())
  )
  const nudged = yield* (yield* TaskQueue).nudge(found.channel.name, hint)
  yield* Effect.logDebug("upstream callback").pipe(
    Effect.annotateLogs({ channel: found.channel.name, tasks_nudged: nudged })
  )
  // A protocol that verifies the URL with a challenge expects it back (Callbacks.ts, `answer`).
  return hint.answer === undefined
    ? HttpServerResponse.empty({ status: 204 })
    : HttpServerResponse.unsafeJson(hint.answer.json, { status: 200 })
}).pipe(
  Effect.timeoutFail({
    duration: ANSWER_WITHIN,
    // The upstream may send it again; polling goes on meanwhile either way.
    onTimeout: () => new CallbackNotTaken()
  })
)

/** The callback route, mounted on the gateway's router beside the contract (like the console). */
export const UpstreamCallbacksLive = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function*() {
    const services = yield* Effect.context<CallbackTokens | TaskQueue | AppConfig>()
    yield* router.post(`${CALLBACK_PATH}/:token`, Effect.provide(receive, services))
  })
)
