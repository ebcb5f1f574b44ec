import { Cause, type Effect, Exit, Layer, ManagedRuntime, Runtime, Stream } from "effect"
import { NodeClientLive } from "../runtime/node/NodeClient.ts"
import type { TaskKind } from "../tasks/Task.ts"
import * as Assets from "./Assets.ts"
import { GatewayClient, type GatewayClientConfig } from "./Client.ts"
import * as Download from "./Download.ts"
import * as ImageFiles from "./ImageFiles.ts"
import * as Tasks from "./Tasks.ts"
import * as Uploads from "./Uploads.ts"
import * as Wait from "./Wait.ts"
import * as Watch from "./Watch.ts"

/** Options every call of the facade takes: an `AbortSignal` interrupts it. */
export interface CallOptions {
  readonly signal?: AbortSignal | undefined
}

/**
 * The typed client for code that does not use Effect: the same operations as
 * promises (Node). A failure rejects with the client's own error
 * (`GatewayError`, `NetworkError`, `TaskFailed`, `WaitTimeout`,
 * `LocalFileError`); an aborted call rejects with the signal's reason.
 */
export const createClient = (config: GatewayClientConfig) => {
  const runtime = ManagedRuntime.make(GatewayClient.layer(config).pipe(Layer.provideMerge(NodeClientLive)))
  const run = async <A, E>(
    effect: Effect.Effect<A, E, GatewayClient | NodeServices>,
    options?: CallOptions
  ): Promise<A> => {
    const exit = await runtime.runPromiseExit(effect, { signal: options?.signal })
    if (Exit.isSuccess(exit)) return exit.value
    if (Cause.isInterruptedOnly(exit.cause) && options?.signal?.aborted) throw options.signal.reason
    const failure = Cause.failureOption(exit.cause)
    throw failure._tag === "Some" ? failure.value : Cause.squash(exit.cause)
  }
  return {
    createVideoTask: (request: Tasks.VideoTaskRequest, options?: Tasks.CreateOptions & CallOptions) =>
      run(Tasks.createVideoTask(request, options), options),
    createImageTask: (request: Tasks.ImageTaskRequest | FormData, options?: Tasks.CreateOptions & CallOptions) =>
      run(Tasks.createImageTask(request, options), options),
    imageEditForm: (fields: ImageFiles.ImageEditFields, images: ReadonlyArray<string>, mask?: string) =>
      run(ImageFiles.imageEditForm(fields, images, mask)),
    getTask: <K extends TaskKind>(kind: K, id: string, options?: CallOptions) => run(Tasks.getTask(kind, id), options),
    listVideoTasks: (params?: Tasks.VideoListParams, options?: CallOptions) =>
      run(Tasks.listVideoTasks(params), options),
    listImageTasks: (params?: Tasks.ImageListParams, options?: CallOptions) =>
      run(Tasks.listImageTasks(params), options),
    cancelTask: <K extends TaskKind>(kind: K, id: string, options?: CallOptions) =>
      run(Tasks.cancelTask(kind, id), options),
    queryTasks: (kind: TaskKind, ids: ReadonlyArray<string>, options?: CallOptions) =>
      run(Tasks.queryTasks(kind, ids), options),
    listModels: (options?: CallOptions) => run(Tasks.listModels, options),
    quoteVideoTask: (request: Tasks.VideoTaskRequest, options?: CallOptions) =>
      run(Tasks.quoteVideoTask(request), options),
    quoteImageTask: (request: Tasks.ImageTaskRequest | FormData, options?: CallOptions) =>
      run(Tasks.quoteImageTask(request), options),
    /**
     * The task's live states (`for await`): the current one, each change,
     * the terminal one, then the iteration ends; reconnects with
     * `Last-Event-ID` when the connection drops. Breaking out of the loop
     * closes the connection.
     */
    watch: <K extends TaskKind>(kind: K, id: string, options?: Watch.WatchOptions): AsyncIterable<Tasks.TaskOf<K>> => ({
      [Symbol.asyncIterator]: () => {
        const started: Promise<AsyncIterator<Tasks.TaskOf<K>>> = runtime.runtime().then((rt) =>
          Stream.toAsyncIterableRuntime(rt)(
            Watch.watchTask(kind, id, options).pipe(Stream.catchAll((error) => Stream.die(error)))
          )[Symbol.asyncIterator]() as AsyncIterator<Tasks.TaskOf<K>>
        )
        // A failure is the client's own error, as for the other calls, not the fiber's wrapper.
        const unwrap = (e: unknown): never => {
          throw Runtime.isFiberFailure(e) ? Cause.squash(e[Runtime.FiberFailureCauseId]) : e
        }
        return {
          next: () => started.then((it) => it.next()).catch(unwrap),
          return: (value?: unknown) =>
            started.then((it) => it.return?.(value) ?? { done: true as const, value: undefined }).catch(unwrap)
        }
      }
    }),
    waitForTask: <K extends TaskKind>(kind: K, id: string, options?: Wait.WaitOptions<Tasks.TaskOf<K>> & CallOptions) =>
      run(Wait.waitForTask(kind, id, options), options),
    uploadFiles: (paths: ReadonlyArray<string>, options?: Uploads.UploadOptions & CallOptions) =>
      run(Uploads.uploadFiles(paths, options), options),
    uploadImages: (images: ReadonlyArray<string>, mask?: string, options?: CallOptions) =>
      run(ImageFiles.uploadImages(images, mask), options),
    downloadResult: (item: Download.Downloadable, dir: string, options?: Download.DownloadOptions & CallOptions) =>
      run(Download.downloadResult(item, dir, options), options),
    downloadTaskResults: (task: Tasks.AnyTask, dir: string, options?: Download.DownloadOptions & CallOptions) =>
      run(Download.downloadTaskResults(task, dir, options), options),
    listAssets: (params?: Assets.AssetListParams, options?: CallOptions) => run(Assets.listAssets(params), options),
    getAsset: (id: string, options?: CallOptions) => run(Assets.getAsset(id), options),
    deleteAsset: (id: string, options?: CallOptions) => run(Assets.deleteAsset(id), options),
    downloadAsset: (id: string, dir: string, options?: Download.DownloadOptions & CallOptions) =>
      run(Assets.downloadAsset(id, dir, options), options),
    /** Releases the HTTP agent; the client is unusable afterwards. */
    close: () => runtime.dispose()
  }
}

type NodeServices = Layer.Layer.Success<typeof NodeClientLive>
export type GatewayPromiseClient = ReturnType<typeof createClient>
