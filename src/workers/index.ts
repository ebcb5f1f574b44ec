import { Effect, Layer } from "effect"
import type { VideoGenerator } from "../plugin/Generator.ts"
import { AppConfig } from "../services/AppConfig.ts"
import { Registry } from "../services/Registry.ts"
import { SandboxGenerator } from "../services/SandboxGenerator.ts"
import { channelWorker } from "./Generation.ts"
import { reaper } from "./Reaper.ts"

/**
 * The long-running fibers of a worker process (ROLE=worker or all): one
 * worker per channel that an enabled model uses, and the lease reaper. They
 * stop with the layer's scope; a task interrupted mid-run goes back to the queue.
 */
export const WorkersLive = Layer.scopedDiscard(
  Effect.gen(function*() {
    const { models } = yield* AppConfig
    const registry = yield* Registry
    const generators: Record<string, VideoGenerator> = { sandbox: yield* SandboxGenerator }
    const used = new Set(registry.videoModels.map((m) => m.settings.generator))
    for (const name of used) {
      yield* Effect.forkScoped(channelWorker(name, models.channels[name as keyof typeof models.channels]!, generators))
    }
    yield* Effect.forkScoped(reaper)
  })
)
