import type { TestGateway } from "./gateway.ts"

/** Where requests go: an in-process gateway or a service running as a process. */
export type Target = Pick<TestGateway, "url">

const isReset = (e: unknown) =>
  e instanceof TypeError && String((e as { cause?: { code?: string } }).cause?.code) === "ECONNRESET"

/**
 * `fetch`, sent again once when it met a reset: the gateway runs in the test's
 * own process, so on a loaded machine fetch may reuse a kept-alive socket the
 * server has just closed as idle. The server never read that request (a reset
 * before any answer on a reused socket), so sending it again is what browsers
 * do too. A body that is a stream could not be sent twice; these are not.
 */
export const fetchRetryingReset = async (url: string, init: RequestInit): Promise<Response> => {
  try {
    return await fetch(url, init)
  } catch (e) {
    if (!isReset(e)) throw e
    return fetch(url, init)
  }
}
