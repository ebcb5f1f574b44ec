/**
 * Benchmark, what recording metrics costs a request: the calls the HTTP
 * paths make on the metrics port (platform/metrics), timed in a loop on one
 * core. A read records one HTTP request (a counter and a histogram; the fast
 * route knows its template); a create also finds its route's template among
 * the contract's (the gateway middleware) and records a created task with its
 * charge (two counters more). The
 * labels cycle over a few routes, statuses and models, as a service sees
 * them. Compare with the paths' CPU per request (bench/read-path.ts,
 * bench/create-path.ts).
 *
 *   npx tsx bench/metrics-record.ts
 *   CALLS=1000000 …   # default
 */
import { Effect } from "effect"
import { ServedApi } from "../src/Gateway.ts"
import { routeLabeller } from "../src/platform/http/Middleware.ts"
import { Metrics } from "../src/platform/metrics/Metrics.ts"
import { MetricsLive } from "../src/platform/metrics/MetricsLive.ts"

const CALLS = Number(process.env.CALLS ?? 1_000_000)
const ROUTES = ["/v1/video/tasks/:task_id", "/v1/image/tasks/:task_id", "/v1/video/tasks", "/v1/models"]
const STATUSES = [200, 200, 200, 404, 202, 401]
const MODELS = ["provx-famS-720p", "provy-famS-2.0-480p", "provx-image-1"]

/** CPU time (user + system) per call, in µs: on a shared machine, wall time would count other processes' turns. */
const cpuMicrosPerCall = (f: (i: number) => void) => {
  for (let i = 0; i < CALLS / 10; i++) f(i) // warm-up: JIT and every label set seen
  const started = process.cpuUsage()
  for (let i = 0; i < CALLS; i++) f(i)
  const used = process.cpuUsage(started)
  return (used.user + used.system) / CALLS
}

const program = Effect.gen(function*() {
  const metrics = yield* Metrics
  const labelOf = routeLabeller(ServedApi, ["GET /metrics"])
  const read = cpuMicrosPerCall((i) =>
    metrics.httpRequest("GET", ROUTES[i % 2]!, STATUSES[i % STATUSES.length]!, 0.0002 + (i % 7) * 1e-4)
  )
  const create = cpuMicrosPerCall((i) => {
    metrics.httpRequest("POST", labelOf("POST", "/v1/video/tasks"), 202, 0.002 + (i % 7) * 1e-3)
    metrics.taskCreated("video", MODELS[i % MODELS.length]!, 160_000)
  })
  // A scrape after all of it, so the recorded series are really there.
  const exposition = yield* metrics.expose("prometheus")
  console.log(`[metrics-record] ${CALLS} calls each; exposition ${exposition.body.length} bytes`)
  console.log(`[metrics-record] read (one HTTP request recorded): ${read.toFixed(2)} µs of CPU per request`)
  console.log(
    `[metrics-record] create (HTTP request + task created and charged): ${create.toFixed(2)} µs of CPU per request`
  )
})

await Effect.runPromise(Effect.scoped(Effect.provide(program, MetricsLive)))
