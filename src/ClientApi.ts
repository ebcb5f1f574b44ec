import type { HttpApi, HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { Schema } from "effect"
import { GatewayApi } from "./Api.ts"
import { VideoCreateRequest } from "./catalog/VideoCreateRequest.ts"
import { BatchQuery } from "./tasks/Api.ts"
import {
  AssetListParams,
  IdempotencyHeaders,
  ImageCreateRequest,
  ImageEditForm,
  ImageTaskListParams,
  VideoTaskListParams
} from "./tasks/Requests.ts"
import {
  CompleteUploadsRequest,
  ImageUploadBase64Request,
  ImageUploadForm,
  MediaUploadRequest
} from "./uploads/Upload.ts"

type AnyEndpoint = HttpApiEndpoint.HttpApiEndpoint.Any
type AnyGroup = HttpApiGroup.HttpApiGroup.Any

/** For each endpoint name of a group, what to make of that endpoint. */
type Changes<Endpoints extends AnyEndpoint> = {
  readonly [N in HttpApiEndpoint.HttpApiEndpoint.Name<Endpoints>]?: (
    endpoint: HttpApiEndpoint.HttpApiEndpoint.WithName<Endpoints, N>
  ) => AnyEndpoint
}

type Changed<Endpoint extends AnyEndpoint, M> = Endpoint extends { readonly name: infer N } ?
  N extends keyof M ? M[N] extends (endpoint: any) => infer A ? (A extends AnyEndpoint ? A : Endpoint) : Endpoint
  : Endpoint
  : never

type ChangedGroup<Group, M> = Group extends HttpApiGroup.HttpApiGroup<infer Id, infer E, infer Err, infer R, infer Top>
  ? HttpApiGroup.HttpApiGroup<Id, Changed<E, M>, Err, R, Top>
  : never

/**
 * `api` with some endpoints of one group replaced by what `changes` make of
 * them. The endpoints keep their name, method, path, success and error
 * schemas and middleware; only the request schemas the handlers read by hand
 * are added, so a client derived from the result sends typed requests.
 */
export const refine = <
  Id extends string,
  Groups extends AnyGroup,
  E,
  R,
  const G extends HttpApiGroup.HttpApiGroup.Name<Groups>,
  const M extends Changes<HttpApiGroup.HttpApiGroup.EndpointsWithName<Groups, G>>
>(
  api: HttpApi.HttpApi<Id, Groups, E, R>,
  group: G,
  changes: M
): HttpApi.HttpApi<
  Id,
  Exclude<Groups, { readonly identifier: G }> | ChangedGroup<HttpApiGroup.HttpApiGroup.WithName<Groups, G>, M>,
  E,
  R
> => {
  // Adding an endpoint or a group under a name it already has replaces it.
  const original = (api as unknown as HttpApi.HttpApi.AnyWithProps).groups[group]!
  let changed = original
  for (const [name, change] of Object.entries(changes) as Array<[string, (e: unknown) => unknown]>) {
    changed = changed.add(
      change(original.endpoints[name]) as HttpApiEndpoint.HttpApiEndpoint.AnyWithProps
    ) as typeof changed
  }
  return (api as unknown as HttpApi.HttpApi.AnyWithProps).add(changed) as any
}

const created = refine(GatewayApi, "taskCreate", {
  createVideoTask: (e) => e.setPayload(VideoCreateRequest).setHeaders(IdempotencyHeaders),
  createImageTask: (e) => e.setPayload(Schema.Union(ImageCreateRequest, ImageEditForm)).setHeaders(IdempotencyHeaders)
})
const read = refine(created, "taskRead", {
  listVideoTasks: (e) => e.setUrlParams(VideoTaskListParams),
  listImageTasks: (e) => e.setUrlParams(ImageTaskListParams),
  queryVideoTasks: (e) => e.setPayload(BatchQuery),
  queryImageTasks: (e) => e.setPayload(BatchQuery)
})
const uploads = refine(read, "uploads", {
  createMediaUploads: (e) => e.setPayload(MediaUploadRequest),
  completeMediaUploads: (e) => e.setPayload(CompleteUploadsRequest),
  createImageUploads: (e) => e.setPayload(ImageUploadForm),
  createImageUploadsBase64: (e) => e.setPayload(ImageUploadBase64Request)
})

const quoted = refine(uploads, "taskQuote", {
  quoteVideoTask: (e) => e.setPayload(VideoCreateRequest),
  quoteImageTask: (e) => e.setPayload(Schema.Union(ImageCreateRequest, ImageEditForm))
})

/**
 * The gateway's contract (`GatewayApi`) as a client sees it: the same
 * endpoints, with the request bodies, query parameters and headers that the
 * handlers read by hand declared, for `HttpApiClient`.
 */
export const GatewayClientApi = refine(quoted, "assets", {
  listAssets: (e) => e.setUrlParams(AssetListParams)
})
export type GatewayClientApi = typeof GatewayClientApi
