import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { ModelKeyAuth, ResourceKeyAuth } from "../accounts/Security.ts"
import { InsufficientBalance, SpendLimitExceeded, TooManyQueuedTasks } from "../billing/Errors.ts"
import { InvalidRequest, UnsupportedModel } from "../catalog/Errors.ts"
import { VideoCreateRequest } from "../catalog/VideoCreateRequest.ts"
import { ModelUnavailable } from "../channel/Errors.ts"
import { BodyErrors, errors, httpFailures, ResourceId } from "../platform/http/ErrorContract.ts"
import { ListEnvelope } from "../platform/http/ListEnvelope.ts"
import { jsonBody, multipartBody } from "../platform/http/OpenApiBody.ts"
import { StorageUnavailable } from "../storage/Errors.ts"
import { InspectionUnavailable, InvalidUpload } from "../uploads/Errors.ts"
import { IdempotencyConflict, InvalidTaskRequest, TaskNotCancellable, TaskNotFound } from "./Errors.ts"
import { ImageCreateRequest, ImageEditFields } from "./Requests.ts"
import { ImageTask, VideoTask } from "./Task.ts"

export const taskPath = Schema.Struct({ task_id: ResourceId(() => new TaskNotFound({ message: "No such task." })) })

/** What creating a task of either kind can answer with, besides reading its body. */
export const CreateErrors = errors(
  InvalidRequest,
  UnsupportedModel,
  InvalidTaskRequest,
  IdempotencyConflict,
  InsufficientBalance,
  TooManyQueuedTasks,
  SpendLimitExceeded,
  ModelUnavailable
)

/** Image inputs are inspected at creation (multipart files and pre-uploads) and stored (503 while the store is away). */
export const ImageInputErrors = errors(InvalidUpload, InspectionUnavailable, StorageUnavailable)

/** A list's query: a malformed parameter (400 from the query reader) or an unknown `after` cursor. */
export const ListErrors = Schema.Union(httpFailures(400), errors(InvalidTaskRequest))

/** The list envelope (docs/api.md, Lists), shared with the other listings. */
export const TaskList = ListEnvelope

export const BatchQuery = Schema.Struct({
  task_ids: Schema.Array(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200))).pipe(
    Schema.minItems(1),
    Schema.maxItems(100)
  )
})

/** The batch query answer: found tasks in request order, and the ids not found under the caller's account. */
export const TaskBatch = <A, I>(item: Schema.Schema<A, I>) =>
  Schema.Struct({ object: Schema.Literal("list"), data: Schema.Array(item), missing: Schema.Array(Schema.String) })

/**
 * The create endpoints' optional headers, read by hand by the handlers (so a
 * bad one answers the spec's error body), documented here.
 */
const createHeaders = {
  parameters: [
    {
      name: "Idempotency-Key",
      in: "header",
      required: false,
      description: "1 to 128 characters; the same key with the same request answers the original task.",
      schema: { type: "string", minLength: 1, maxLength: 128 }
    },
    {
      name: "Cancel-After",
      in: "header",
      required: false,
      description:
        "A deadline: the task is cancelled with task_deadline_exceeded (and refunded) if it has not ended by then. " +
        "45s, 10m, 2h or plain seconds, from 10 seconds to 48 hours; anything else is 400 invalid_request.",
      schema: { type: "string", pattern: "^[0-9]{1,9}[smh]?$" }
    }
  ]
}

/** Both forms of `POST /v1/image/tasks`: JSON, and multipart for an edit with files. */
export const imageTaskBody = {
  requestBody: {
    required: true,
    content: {
      ...jsonBody(ImageCreateRequest).requestBody.content,
      ...multipartBody(ImageEditFields, {
        image: "A source image; repeat the field for several.",
        mask: "Optional mask."
      })
        .requestBody.content
    }
  }
}

/**
 * Creating tasks: `sk-` model tokens. Bodies are read and validated by the
 * handlers against the plugin-derived rules, so every failure has the spec's
 * error body and code.
 */
export class TaskCreateApi extends HttpApiGroup.make("taskCreate")
  .add(
    HttpApiEndpoint.post("createVideoTask", "/v1/video/tasks").addSuccess(VideoTask, { status: 202 })
      .addError(BodyErrors).addError(CreateErrors)
      .annotate(OpenApi.Override, { ...jsonBody(VideoCreateRequest), ...createHeaders })
  )
  .add(
    HttpApiEndpoint.post("createImageTask", "/v1/image/tasks").addSuccess(ImageTask, { status: 202 })
      .addError(BodyErrors).addError(CreateErrors).addError(ImageInputErrors)
      .annotate(OpenApi.Override, { ...imageTaskBody, ...createHeaders })
  )
  .middleware(ModelKeyAuth)
  .annotate(OpenApi.Title, "Task creation")
{}

/** Reading tasks: `ak_` resource keys, own account only. Query parameters are checked by the handlers. */
export class TaskReadApi extends HttpApiGroup.make("taskRead")
  .add(HttpApiEndpoint.get("listVideoTasks", "/v1/video/tasks").addSuccess(TaskList(VideoTask)).addError(ListErrors))
  .add(
    HttpApiEndpoint.post("queryVideoTasks", "/v1/video/tasks/query").addSuccess(TaskBatch(VideoTask))
      .addError(BodyErrors)
      .annotate(OpenApi.Override, jsonBody(BatchQuery))
  )
  .add(
    HttpApiEndpoint.get("getVideoTask", "/v1/video/tasks/:task_id").setPath(taskPath).addSuccess(VideoTask)
      .addError(errors(TaskNotFound))
  )
  .add(HttpApiEndpoint.get("listImageTasks", "/v1/image/tasks").addSuccess(TaskList(ImageTask)).addError(ListErrors))
  .add(
    HttpApiEndpoint.post("queryImageTasks", "/v1/image/tasks/query").addSuccess(TaskBatch(ImageTask))
      .addError(BodyErrors)
      .annotate(OpenApi.Override, jsonBody(BatchQuery))
  )
  .add(
    HttpApiEndpoint.get("getImageTask", "/v1/image/tasks/:task_id").setPath(taskPath).addSuccess(ImageTask)
      .addError(errors(TaskNotFound))
  )
  .middleware(ResourceKeyAuth)
  .annotate(OpenApi.Title, "Task queries")
{}

/**
 * Controlling tasks: `ak_` resource keys, own account only. A cancel ends a
 * task no provider has started at once (refunded in full); one waiting at a
 * provider is cancelled there first, where the provider can (docs/api.md).
 */
export class TaskControlApi extends HttpApiGroup.make("taskControl")
  .add(
    HttpApiEndpoint.post("cancelVideoTask", "/v1/video/tasks/:task_id/cancel").setPath(taskPath)
      .addSuccess(VideoTask).addError(errors(TaskNotFound, TaskNotCancellable))
  )
  .add(
    HttpApiEndpoint.post("cancelImageTask", "/v1/image/tasks/:task_id/cancel").setPath(taskPath)
      .addSuccess(ImageTask).addError(errors(TaskNotFound, TaskNotCancellable))
  )
  .middleware(ResourceKeyAuth)
  .annotate(OpenApi.Title, "Task control")
{}
