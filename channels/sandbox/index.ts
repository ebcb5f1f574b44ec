import { Effect, Layer, Schema } from "effect"
import { defineAdapter, type ProviderOptions } from "../../src/channel/contract/Adapter.ts"
import { SandboxGenerator } from "./SandboxGenerator.ts"
import { SandboxImageGenerator } from "./SandboxImageGenerator.ts"
import { SandboxImageRenderer } from "./SandboxImageRenderer.ts"
import { SandboxRenderer } from "./SandboxRenderer.ts"

/**
 * The sandbox's per-request switch (docs/adapters/sandbox.md, Rehearsing), like
 * a payment provider's test cards. Only models routed to a sandbox channel
 * accept it.
 */
const VIDEO_OPTIONS: ProviderOptions = {
  sandbox: {
    outcome: { type: "string", enum: ["succeed", "fail"] },
    delay_ms: { type: "integer", min: 0, max: 600_000 }
  }
}

/** Images may also rehearse a temporarily unavailable service (a failed task with code 524). */
const IMAGE_OPTIONS: ProviderOptions = {
  sandbox: {
    outcome: { type: "string", enum: ["succeed", "fail", "unavailable"] },
    delay_ms: { type: "integer", min: 0, max: 600_000 }
  }
}

const GeneratorsLive = Layer.mergeAll(SandboxGenerator.layer, SandboxImageGenerator.layer).pipe(
  Layer.provide([SandboxRenderer.layer, SandboxImageRenderer.layer])
)

/**
 * The offline adapter every family can be routed to: renders real media with
 * the bundled ffmpeg (SandboxGenerator, SandboxImageGenerator). It takes no
 * settings beyond the common ones.
 */
export default defineAdapter({
  name: "sandbox",
  kinds: ["video", "image"],
  settings: Schema.Struct({}),
  providerOptions: { video: VIDEO_OPTIONS, image: IMAGE_OPTIONS },
  // Nothing upstream: generation runs in this process.
  check: () => Effect.succeed({ result: "ok", detail: "the sandbox generates in this process; nothing to reach" }),
  make: () =>
    Effect.gen(function*() {
      return { video: yield* SandboxGenerator, image: yield* SandboxImageGenerator }
    }).pipe(Effect.provide(GeneratorsLive))
})
