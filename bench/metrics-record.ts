/**
 * Benchmark, what recording metrics costs a request: the calls the HTTP
 * paths make on the metrics port (platform/metrics), timed in a loop on one
 * core. A read records one HTTP request (a counter and a histogram); a create
 * records that and a created task with its charge (two counters more). The
 * labels cycle over a few routes, statuses and models, as a service sees
 * them. Compare with the paths' CPU per request (bench/read-path.ts,
 * bench/create-path.ts).
 *
 *   npx tsx bench/metrics-record.ts
 *   CALLS=1000000 …   # default
 */
import { Effect } from "effect"
import { Metrics } from "../src/platform/metrics/Metrics.ts"
import { MetricsLive } from "../src/platform/metrics/MetricsLive.ts"

const CALLS = Number(process.env.CALLS ?? 1_000_000)
const ROUTES = ["/v1/video/tasks/:task_id", "/v1/image/tasks/:task_id", "/v1/video/tasks", "/v1/models"]
const STATUSES = [200, 200, 200, 404, 202, 401]
const MODELS = ["provx-famS-720p", "provy-famS-2.0-480p", "provx-image-1"]

const timeNsPerCall = (f: (i: number) => void) => {
  for (let i = 0; i < CALLS / 10; i++) f(i) // warm-up: JIT and every label set seen
  const started = process.hrtime.bigint()
  for (let i = 0; i < CALLS; i++) f(i)
  return Number(process.hrtime.bigint() - started) / CALLS
}

const program = Effect.gen(function*() {
  const metrics = yield* Metrics
  const read = timeNsPerCall((i) =>
    metrics.httpRequest("GET", ROUTES[i % 2]!, STATUSES[i % STATUSES.length]!, 0.0002 + (i % 7) * 1e-4)
  )
  const create = timeNsPerCall((i) => {
    metrics.httpRequest("POST", ROUTES[2]!, 202, 0.002 + (i % 7) * 1e-3)
    metrics.taskCreated("video", MODELS[i % MODELS.length]!, 160_000)
  })
  // A scrape after all of it, so the recorded series are really there.
  const exposition = yield* metrics.expose("prometheus")
  console.log(`[metrics-record] ${CALLS} calls each; exposition ${exposition.body.length} bytes`)
  console.log(`[metrics-record] read (one HTTP request recorded): ${(read / 1000).toFixed(2)} µs per request`)
  console.log(
    `[metrics-record] create (HTTP request + task created and charged): ${(create / 1000).toFixed(2)} µs per request`
  )
})

await Effect.runPromise(Effect.scoped(Effect.provide(program, MetricsLive)))
