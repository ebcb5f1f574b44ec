import type { HttpClient } from "@effect/platform"
import { Context } from "effect"

/**
 * The HTTP client for URLs that callers and account owners choose (webhook
 * receivers, reference media, image inputs): unless `ALLOW_PRIVATE_TARGETS`
 * is set, it refuses at connect time a literal address, or a host name that
 * resolves to an address, that is not public by `isPublicAddress`
 * (src/platform/TargetUrl.ts), so neither a DNS answer nor a URL form the first
 * check missed can reach the service's own network. `checkTargetUrl` checks
 * each URL before it is requested. The runtime provides it
 * (`src/runtime/node/TargetHttpClient.ts` on Node); it follows no redirects.
 * Operator-configured upstreams use a plain HttpClient instead.
 */
export class TargetHttpClient extends Context.Tag("TargetHttpClient")<TargetHttpClient, HttpClient.HttpClient>() {}
