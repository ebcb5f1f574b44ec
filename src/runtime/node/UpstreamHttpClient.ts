import { NodeHttpClient } from "@effect/platform-node"

/**
 * The plain HttpClient of the channel ports (src/channel/Adapter.ts): for
 * upstreams an operator configured, so unlike TargetHttpClient it does not
 * refuse private addresses (a self-hosted upstream may live on one).
 */
export const UpstreamHttpClientLive = NodeHttpClient.layerUndici
