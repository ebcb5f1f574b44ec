import { HttpServerResponse } from "@effect/platform"
import { Cause, Data, Effect } from "effect"

/** A refusal of a console endpoint: the status and the code the front end shows. */
export class ConsoleError extends Data.TaggedError("ConsoleError")<{
  readonly status: number
  readonly code: string
  readonly message: string
}> {}

export const consoleError = (status: number, code: string, message: string) =>
  Effect.fail(new ConsoleError({ status, code, message }))

/** Console answers are private to the signed-in browser: never cached by anyone. */
const NO_STORE = { "cache-control": "no-store" } as const

export const json = (body: unknown, status = 200, headers: Record<string, string> = {}) =>
  HttpServerResponse.unsafeJson(body, { status, headers: { ...NO_STORE, ...headers } })

/**
 * The services fail with their features' errors (a status, a code and a
 * message); those are shown as they are. Anything else is a fault of ours:
 * logged, and a plain 500 so nothing internal reaches the page.
 */
const describe = (error: unknown): { status: number; code: string; message: string } | undefined => {
  const e = error as { status?: unknown; code?: unknown; message?: unknown }
  return typeof e?.status === "number" && typeof e.code === "string" && typeof e.message === "string"
    ? { status: e.status, code: e.code, message: e.message }
    : undefined
}

const INTERNAL = { error: { code: "internal_error", message: "The console failed; see the server log." } }

/** Runs a console handler, turning every failure into `{ error: { code, message } }`. */
export const answer = <E, R>(handler: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>) =>
  handler.pipe(
    Effect.catchAllCause((cause) => {
      if (Cause.isInterruptedOnly(cause)) return Effect.interrupt
      // Only an expected failure is shown; a defect that happens to look like one is still ours.
      const failure = Cause.failureOption(cause)
      const known = failure._tag === "Some" ? describe(failure.value) : undefined
      return known !== undefined
        ? Effect.succeed(json({ error: { code: known.code, message: known.message } }, known.status))
        : Effect.as(Effect.logError("console handler failed", cause), json(INTERNAL, 500))
    })
  )
