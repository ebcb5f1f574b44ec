import { NodeFileSystem, NodeHttpClient, NodePath } from "@effect/platform-node"
import { Layer } from "effect"

/**
 * What the typed client needs on Node: an HTTP client on `node:http` (a
 * pre-signed PUT must carry its Content-Length, which `fetch` cannot set for a
 * streamed body), the file system and paths. Another runtime provides its own.
 */
export const NodeClientLive = Layer.mergeAll(NodeHttpClient.layer, NodeFileSystem.layer, NodePath.layer)
