import { Effect, Layer } from "effect"
import { AppConfig } from "./platform/AppConfig.ts"
import { Registry } from "./catalog/Registry.ts"
import { SandboxGenerator } from "../channels/sandbox/SandboxGenerator.ts"
import { SandboxImageGenerator } from "../channels/sandbox/SandboxImageGenerator.ts"
import { channelWorker } from "./tasks/engine/ChannelWorker.ts"
import type { Generators } from "./tasks/engine/Plans.ts"
import { reaper } from "./tasks/engine/Reaper.ts"
import { uploadSweeper } from "./uploads/UploadSweeper.ts"
import { webhookWorker } from "./webhooks/DeliveryWorker.ts"

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
