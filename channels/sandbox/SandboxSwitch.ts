import { Duration, Effect } from "effect"
import { FailureCodes, GenerationError } from "../../src/channel/contract/Adapter.ts"

/** The sandbox's per-request switch, `provider_options.sandbox` (docs/adapters/sandbox.md, Rehearsing). */
interface SandboxSwitch {
  readonly outcome?: "succeed" | "fail" | "unavailable"
  readonly delay_ms?: number
}

/** Share of the progress bar the requested `delay_ms` fills before the work starts. */
export const DELAY_SHARE = 30
const DELAY_TICKS = 10

/**
 * Plays the switch before a sandbox generator works: waits `delay_ms` in
 * steps that report progress, then fails as asked. `fail` is a final
 * failure; `unavailable` a transient one, which the engine retries and,
 * once retries are spent, reports as the service being unavailable.
 */
export const rehearse = (
  providerOptions: Readonly<Record<string, Readonly<Record<string, unknown>>>>,
  failure: { readonly code: string; readonly message: string },
  progress: (percent: number) => Effect.Effect<void>
) =>
  Effect.gen(function*() {
    const sandbox = (providerOptions.sandbox ?? {}) as SandboxSwitch
    const delayMs = sandbox.delay_ms ?? 0
    for (let tick = 1; delayMs > 0 && tick <= DELAY_TICKS; tick++) {
      yield* Effect.sleep(Duration.millis(delayMs / DELAY_TICKS))
      yield* progress((DELAY_SHARE * tick) / DELAY_TICKS)
    }
    if (sandbox.outcome === "fail") {
      return yield* new GenerationError({ ...failure, retryable: false, transient: false })
    }
    if (sandbox.outcome === "unavailable") {
      return yield* new GenerationError({
        code: FailureCodes.imageUnavailable,
        message: "The generation service is temporarily unavailable.",
        retryable: true,
        transient: true
      })
    }
    return { renderFrom: delayMs > 0 ? DELAY_SHARE : 0 }
  })
