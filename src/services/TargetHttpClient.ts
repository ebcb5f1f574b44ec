import type { HttpClient } from "@effect/platform"
import { Context } from "effect"

/**
 * The HTTP client for URLs that callers and account owners choose (webhook
 * receivers, reference media): unless `ALLOW_PRIVATE_TARGETS` is set, it
 * refuses at connect time a host name that resolves to a loopback, private or
 * otherwise non-public address, so a DNS answer cannot turn an accepted URL
 * into a request to the service's own network. Literal IP addresses are not
 * looked up; `checkTargetUrl` refuses those before a request is made. The
 * runtime provides it (`src/runtime/TargetHttpClient.ts` on Node); it follows
 * no redirects. Operator-configured upstreams use a plain HttpClient instead.
 */
export class TargetHttpClient extends Context.Tag("TargetHttpClient")<TargetHttpClient, HttpClient.HttpClient>() {}
