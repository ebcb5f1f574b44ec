import { NodeHttpClient } from "@effect/platform-node"

/**
 * The plain HttpClient of the channel ports (src/channel/Adapter.ts): for
 * upstreams an operator configured, so unlike TargetHttpClient it does not
 * refuse private addresses (a self-hosted upstream may live on one).
 * node:http rather than the undici client: the undici package does not take
 * Node's own FormData as a body, and multipart uploads (image edits) need it.
 */
export const UpstreamHttpClientLive = NodeHttpClient.layer
