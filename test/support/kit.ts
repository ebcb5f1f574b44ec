import { probeBytes } from "./media.ts"

/**
 * The one module a family's or an adapter's tests import (docs/plugins.md,
 * Testing a family): a gateway on a copy of `config/` with edits, a
 * caller's API and accounts, a task run to its end (beside a fake upstream,
 * with the requests it caused), refusals, the books' checks, downloading
 * and probing a result, and that nothing of an upstream reaches a caller.
 * The modules it gathers stay where they are; this is their front door.
 */

export { createAccount, operator } from "./adminApi.ts"
export { api } from "./api.ts"
export { alsoWith, configWith } from "./config.ts"
export { backend } from "./database.ts"
export { eventually } from "./eventually.ts"
export { startGateway, type TestGateway } from "./gateway.ts"
export { probeBytes, type Probed } from "./media.ts"
export { configuredFamilies, configuredModelIds } from "./plugins.ts"
export { refused } from "./taskApi.ts"
export {
  besideFake,
  createAndWait,
  engineRow,
  expectChargedOnce,
  expectNoneOf,
  expectRefunded,
  fieldOf,
  quickEngine,
  runBesideFake
} from "./upstream.ts"

/** A result's bytes, downloaded as a caller would (its URL from the task), and what ffprobe reads in them. */
export const download = async (url: string) => {
  const response = await fetch(url)
  if (!response.ok) throw new Error(`GET ${url} answered ${response.status}`)
  const bytes = new Uint8Array(await response.arrayBuffer())
  return { bytes, contentType: response.headers.get("content-type"), probed: await probeBytes(bytes) }
}

/** A video create's body, as the typed client takes it. */
export type VideoBody = Parameters<ReturnType<typeof import("./api.ts").api>["createVideo"]>[0]
