import { FetchHttpClient } from "@effect/platform"
import { Effect, Either } from "effect"
import { GatewayClient, type GatewayClientService } from "../../src/client/Client.ts"
import type { ClientError } from "../../src/client/Errors.ts"
import type { Target } from "./http.ts"

/**
 * The contract's own typed client for contract tests: `HttpApiClient`
 * derived from `src/ClientApi.ts` (the contract the server implements), with
 * the account's two keys. A request or an answer that does not match the
 * contract fails to compile or to decode, so a test cannot drift from it.
 * Each call gives the outcome as an Either: the decoded answer, or the
 * spec's error as a `GatewayError` (status, type, code, message).
 */
export const typedClient = (gw: Target, keys: { readonly model: string; readonly resource: string }) => {
  const client = GatewayClient.make({ baseUrl: gw.url, modelToken: keys.model, resourceKey: keys.resource })
  return <A>(
    call: (c: GatewayClientService) => Effect.Effect<A, ClientError | unknown>
  ): Promise<Either.Either<A, unknown>> =>
    Effect.runPromise(Effect.either(Effect.flatMap(client, call)).pipe(Effect.provide(FetchHttpClient.layer)))
}
