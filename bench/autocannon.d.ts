/**
 * The part of autocannon 9's programmatic API the benchmarks use. The package
 * ships no types and @types/autocannon is not a dependency, so this is local.
 */
declare module "autocannon" {
  import type { EventEmitter } from "node:events"

  namespace autocannon {
    interface Options {
      readonly url: string
      readonly method?: string
      readonly headers?: Record<string, string>
      readonly connections?: number
      readonly pipelining?: number
      /** Seconds. */
      readonly duration?: number
      /** Seconds before a request counts as timed out. */
      readonly timeout?: number
      readonly title?: string
      readonly excludeErrorStats?: boolean
      readonly body?: string
      /** Requests each connection sends in turn; `setupRequest` may rewrite one before it goes. */
      readonly requests?: ReadonlyArray<RequestSpec>
    }

    interface RequestSpec {
      readonly method?: string
      readonly path?: string
      readonly headers?: Record<string, string>
      readonly body?: string
      readonly setupRequest?: (request: RequestSpec) => RequestSpec
    }

    /** Percentiles are keyed p0_001 … p99_999; values in the histogram's unit. */
    interface Histogram {
      readonly average: number
      readonly mean: number
      readonly stddev: number
      readonly min: number
      readonly max: number
      readonly total: number
      readonly p50: number
      readonly p90: number
      readonly p99: number
      readonly [percentile: string]: number
    }

    interface Result {
      readonly url: string
      readonly connections: number
      readonly pipelining: number
      readonly duration: number
      readonly samples: number
      readonly errors: number
      readonly timeouts: number
      readonly mismatches: number
      readonly non2xx: number
      readonly resets: number
      readonly "1xx": number
      readonly "2xx": number
      readonly "3xx": number
      readonly "4xx": number
      readonly "5xx": number
      readonly statusCodeStats: Record<string, { readonly count: number }>
      /** Milliseconds, recorded as integers. */
      readonly latency: Histogram
      /** Requests per one-second sample; `total` completed, `sent` sent. */
      readonly requests: Histogram & { readonly sent: number }
      /** Bytes per one-second sample; `total` bytes. */
      readonly throughput: Histogram
      readonly start: Date
      readonly finish: Date
    }

    /** The running job: events as it goes, and a promise of the result. */
    interface Instance extends EventEmitter, PromiseLike<Result> {
      on(event: "response", listener: (client: unknown, statusCode: number, resBytes: number, responseTimeMs: number) => void): this
      on(event: string, listener: (...args: Array<any>) => void): this
    }
  }

  function autocannon(options: autocannon.Options): autocannon.Instance
  export default autocannon
}
