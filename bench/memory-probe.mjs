// Preloaded into the service a benchmark measures (`node --expose-gc --import bench/memory-probe.mjs`):
// on SIGUSR2 it collects garbage (twice: the second pass frees what the first's finalizers released),
// then writes `process.memoryUsage()` to MEMORY_PROBE_FILE. So a figure is live memory, not the
// garbage a burst of requests happened to leave behind before the next collection.
import { renameSync, writeFileSync } from "node:fs"

const file = process.env.MEMORY_PROBE_FILE
if (file !== undefined && typeof globalThis.gc === "function") {
  process.on("SIGUSR2", () => {
    globalThis.gc()
    globalThis.gc()
    writeFileSync(`${file}.tmp`, JSON.stringify(process.memoryUsage()))
    renameSync(`${file}.tmp`, file)
  })
}
