// Preloaded into the service a benchmark measures (`node --import bench/allocation-probe.mjs`): the first
// SIGUSR2 starts counting what the JavaScript heap allocates, the next one stops and writes the count to
// ALLOCATION_PROBE_FILE as JSON ({ bytes, gcs, gcMs }). Bytes allocated are read from V8's GC profiler:
// the heap's use before each collection less its use after the one before (and the use at the stop less
// the last collection's). Unlike CPU time, a machine's load from other work hardly moves it, so two
// checkouts' allocations per request compare even on a busy machine.
import { renameSync, writeFileSync } from "node:fs"
import { GCProfiler, getHeapStatistics } from "node:v8"

const file = process.env.ALLOCATION_PROBE_FILE
if (file !== undefined) {
  let profiler
  let startUsed = 0
  process.on("SIGUSR2", () => {
    if (profiler === undefined) {
      profiler = new GCProfiler()
      profiler.start()
      startUsed = getHeapStatistics().used_heap_size
      return
    }
    const endUsed = getHeapStatistics().used_heap_size
    const { statistics } = profiler.stop()
    profiler = undefined
    let bytes = 0
    let previous = startUsed
    let gcUs = 0
    for (const gc of statistics) {
      bytes += gc.beforeGC.heapStatistics.usedHeapSize - previous
      previous = gc.afterGC.heapStatistics.usedHeapSize
      gcUs += gc.cost
    }
    bytes += endUsed - previous
    writeFileSync(`${file}.tmp`, JSON.stringify({ bytes, gcs: statistics.length, gcMs: gcUs / 1000 }))
    renameSync(`${file}.tmp`, file)
  })
}
