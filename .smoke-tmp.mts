import { NodeContext } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import { writeFileSync } from "node:fs"
import { MediaToolsLive } from "/work/main/src/runtime/MediaTools.ts"
import { SandboxRenderer } from "/work/main/src/services/SandboxRenderer.ts"

const layer = SandboxRenderer.layer.pipe(Layer.provide(MediaToolsLive), Layer.provide(NodeContext.layer))
const [prompt, d, w, h, a] = process.argv.slice(2)
const prog = Effect.gen(function*() {
  const r = yield* SandboxRenderer
  const t0 = Date.now()
  const v = yield* r.renderVideo({ prompt: prompt!, durationS: Number(d), width: Number(w), height: Number(h), audio: a === "1", onProgress: (p) => Effect.sync(() => process.stdout.write(p + " ")) })
  console.log("\nms", Date.now() - t0, v.bytes.length, v.durationMs)
  writeFileSync(`/tmp/mt/smoke/out.mp4`, v.bytes)
  console.log(yield* r.probeBytes(v.bytes))
})
Effect.runPromise(prog.pipe(Effect.provide(layer))).catch((e) => { console.error("FAILED", e); process.exit(1) })
