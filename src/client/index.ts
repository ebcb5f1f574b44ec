/**
 * The typed client of the media task gateway (`media-task-gateway/client`).
 *
 * Effect: provide `GatewayClient.layer({ baseUrl, modelToken, resourceKey })`
 * and an `HttpClient`, `FileSystem` and `Path` (on Node: `NodeClientLive`),
 * then use the helpers below, or `GatewayClient`'s `model` / `resource`
 * members, which are `HttpApiClient`s over the contract itself.
 * Promises: `createClient({ ... })`.
 */
export { GatewayApi } from "../Api.ts"
export type { Asset } from "../assets/Asset.ts"
export { GatewayClientApi } from "../ClientApi.ts"
export { NodeClientLive } from "../runtime/node/NodeClient.ts"
export type { ImageCreateRequest } from "../tasks/Requests.ts"
export type { ImageTask, TaskKind, TaskStatus, VideoTask } from "../tasks/Task.ts"
export type { ConfirmedUpload, ImageUploadList } from "../uploads/Upload.ts"
export { deleteAsset, downloadAsset, getAsset, listAssets } from "./Assets.ts"
export type { AssetListParams } from "./Assets.ts"
export { type ApiClient, GatewayClient, type GatewayClientConfig, type GatewayClientService } from "./Client.ts"
export { downloadResult, downloadTaskResults } from "./Download.ts"
export type { Downloadable, DownloadOptions } from "./Download.ts"
export { type ClientError, GatewayError, LocalFileError, NetworkError, TaskFailed, WaitTimeout } from "./Errors.ts"
export { imageEditForm, uploadImages } from "./ImageFiles.ts"
export type { ImageEditFields } from "./ImageFiles.ts"
export { describeFile, isUrl, type LocalFile } from "./LocalFiles.ts"
export { type CallOptions, createClient, type GatewayPromiseClient } from "./Promise.ts"
export {
  cancelTask,
  createImageTask,
  createVideoTask,
  getTask,
  listImageTasks,
  listModels,
  listVideoTasks,
  queryTasks,
  quoteImageTask,
  quoteVideoTask
} from "./Tasks.ts"
export type {
  AnyTask,
  CreateOptions,
  ImageListParams,
  ImageTaskRequest,
  TaskOf,
  TaskQuote,
  TaskReply,
  VideoListParams,
  VideoTaskRequest
} from "./Tasks.ts"
export { type Uploaded, uploadFiles, type UploadOptions, type UploadProgress } from "./Uploads.ts"
export { waitForTask, type WaitOptions } from "./Wait.ts"
export { type WatchOptions, watchTask, watchUntilDone } from "./Watch.ts"
