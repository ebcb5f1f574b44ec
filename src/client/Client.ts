import { HttpApiClient, HttpClient, HttpClientRequest } from "@effect/platform"
import { Context, Effect, Layer } from "effect"
import { GatewayClientApi } from "../ClientApi.ts"
import type { ClientError } from "./Errors.ts"
import { gatewayHttp } from "./Http.ts"

/** Where the gateway is and the caller's keys (spec: Authentication). */
export interface GatewayClientConfig {
  /** e.g. `http://127.0.0.1:8080`, without `/v1`. */
  readonly baseUrl: string
  /** `sk-…`: creating tasks. */
  readonly modelToken?: string | undefined
  /** `ak_…`: reading tasks, uploads, assets, downloads with `url_auth: resource_api_key`. */
  readonly resourceKey?: string | undefined
}

const apiClient = (http: HttpClient.HttpClient.With<ClientError>, baseUrl: string, key: string | undefined) =>
  HttpApiClient.makeWith(GatewayClientApi, {
    httpClient: key === undefined ? http : HttpClient.mapRequest(http, HttpClientRequest.bearerToken(key)),
    baseUrl
  })

/** `HttpApiClient` over the contract (`GatewayClientApi`), with one key. */
export type ApiClient = Effect.Effect.Success<ReturnType<typeof apiClient>>

export interface GatewayClientService {
  readonly config: GatewayClientConfig
  /** The contract's endpoints with the model token: `taskCreate`, `models`, `images`. */
  readonly model: ApiClient
  /** The contract's endpoints with the resource key: everything else. */
  readonly resource: ApiClient
  /** Plain HTTP with the gateway's error mapping and no key, for pre-signed and result URLs. */
  readonly http: HttpClient.HttpClient.With<ClientError>
}

/**
 * The typed client of the gateway: `HttpApiClient` derived from the same
 * contract the server implements, plus the plain HTTP the three-step upload
 * and downloads need. Needs an `HttpClient` (any runtime's); the helpers in
 * this folder take it from the context.
 */
export class GatewayClient
  extends Context.Tag("media-task-gateway/GatewayClient")<GatewayClient, GatewayClientService>()
{
  static readonly make = (config: GatewayClientConfig) =>
    Effect.gen(function*() {
      const http = gatewayHttp(yield* HttpClient.HttpClient)
      const baseUrl = config.baseUrl.replace(/\/+$/, "")
      return GatewayClient.of({
        config,
        model: yield* apiClient(http, baseUrl, config.modelToken),
        resource: yield* apiClient(http, baseUrl, config.resourceKey),
        http
      })
    })

  static readonly layer = (config: GatewayClientConfig) => Layer.effect(GatewayClient, GatewayClient.make(config))
}
