import { Effect, Layer } from "effect"
import { AppConfig } from "../services/AppConfig.ts"
import { Registry } from "../services/Registry.ts"
import { SandboxGenerator } from "../services/SandboxGenerator.ts"
import { SandboxImageGenerator } from "../services/SandboxImageGenerator.ts"
import { channelWorker } from "./Generation.ts"
import type { Generators } from "./Plans.ts"
import { reaper } from "./Reaper.ts"
import { uploadSweeper } from "./UploadSweeper.ts"
import { webhookWorker } from "./Webhooks.ts"

/**
 * The long-running fibers of a worker process (ROLE=worker or all): one
 * worker per channel that an enabled model uses, the lease reaper, the
 * webhook delivery worker and the sweeper of expired uploads. They stop with the layer's scope; a task
 * interrupted mid-run goes back to the queue, a webhook attempt is sent again.
 */
export const WorkersLive = Layer.scopedDiscard(
  Effect.gen(function*() {
    const { models } = yield* AppConfig
    const registry = yield* Registry
    const generators: Generators = {
      video: { sandbox: yield* SandboxGenerator },
      image: { sandbox: yield* SandboxImageGenerator }
    }
    const used = new Set([...registry.videoModels, ...registry.imageModels].map((m) => m.settings.generator))
    for (const name of used) {
      yield* Effect.forkScoped(channelWorker(name, models.channels[name as keyof typeof models.channels]!, generators))
    }
    yield* Effect.forkScoped(reaper)
    yield* Effect.forkScoped(webhookWorker)
    yield* Effect.forkScoped(uploadSweeper)
  })
)
