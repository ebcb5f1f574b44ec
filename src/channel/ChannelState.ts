import { Schema } from "effect"

/**
 * An operator's state of a channel (docs/operating.md, Channels): `enabled`
 * takes new work; `draining` takes none (tasks already upstream are polled
 * and finished, queued ones wait); `disabled` takes none and its queued tasks
 * go on to the model's next channel as failover.
 */
export const ChannelStateName = Schema.Literal("enabled", "draining", "disabled")
export type ChannelStateName = typeof ChannelStateName.Type
