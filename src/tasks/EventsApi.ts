import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { ResourceKeyAuth } from "../accounts/Security.ts"
import { errors } from "../platform/http/ErrorContract.ts"
import { taskPath } from "./Api.ts"
import { TaskNotFound } from "./Errors.ts"

/**
 * A live status stream: `text/event-stream` events `task` (id: the task's
 * change sequence, data: the task object as the query endpoint answers it)
 * and `: keep-alive` comments (docs/api.md, Live status).
 */
export const TaskEventStream = Schema.String.pipe(
  HttpApiSchema.withEncoding({ kind: "Text", contentType: "text/event-stream" }),
  Schema.annotations({
    description: "Server-sent events: `task` events (data: the task object) until the task is terminal; "
      + "`: keep-alive` comments every 15 s. Send `Last-Event-ID` to resume."
  })
)

/** Live status of a task: resource keys, own account only. Past the per-key bound of open streams: 429. */
export class TaskEventsApi extends HttpApiGroup.make("taskEvents")
  .add(
    HttpApiEndpoint.get("videoTaskEvents", "/v1/video/tasks/:task_id/events").setPath(taskPath)
      .addSuccess(TaskEventStream).addError(errors(TaskNotFound))
  )
  .add(
    HttpApiEndpoint.get("imageTaskEvents", "/v1/image/tasks/:task_id/events").setPath(taskPath)
      .addSuccess(TaskEventStream).addError(errors(TaskNotFound))
  )
  .middleware(ResourceKeyAuth)
  .annotate(OpenApi.Title, "Task live status")
{}
