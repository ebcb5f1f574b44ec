import { Args, Command, Options } from "@effect/cli"
import { Effect, Option } from "effect"
import { getTask, listImageTasks, listVideoTasks } from "../client/Tasks.ts"
import type { TaskKind } from "../tasks/Task.ts"
import { common, output, withGateway } from "./Common.ts"
import { printTask, watchTask } from "./TaskFlow.ts"
import { createOptions } from "./VideoCommand.ts"

const kindOption = Options.choice("kind", ["video", "image"]).pipe(
  Options.optional,
  Options.withDescription("video or image; by default a video task, then an image task of that id.")
)

const taskId = Args.text({ name: "task_id" }).pipe(Args.withDescription("The task's id."))

/** Which kind a task id is: the one asked for, else video unless no video task has that id. */
const kindOf = (kind: Option.Option<TaskKind>, id: string) =>
  Option.isSome(kind)
    ? Effect.succeed(kind.value)
    : getTask("video", id).pipe(
      Effect.as("video" as TaskKind),
      Effect.catchIf((e) => e._tag === "GatewayError" && e.code === "task_not_found", () =>
        Effect.succeed("image" as TaskKind))
    )

const list = Command.make("list", {
  ...common,
  kind: Options.choice("kind", ["video", "image"]).pipe(Options.withDefault("video" as const)),
  status: Options.choice("status", ["queued", "in_progress", "succeeded", "failed"]).pipe(Options.optional),
  clientReferenceId: Options.text("client-reference-id").pipe(Options.optional),
  after: Options.text("after").pipe(Options.optional, Options.withDescription("last_id of the previous page.")),
  limit: Options.integer("limit").pipe(Options.optional, Options.withDescription("1 to 100 (default 20)."))
}, (o) =>
  Effect.gen(function*() {
    const params = {
      ...(Option.isSome(o.status) ? { status: o.status.value } : {}),
      ...(Option.isSome(o.clientReferenceId) ? { client_reference_id: o.clientReferenceId.value } : {}),
      ...(Option.isSome(o.after) ? { after: o.after.value } : {}),
      ...(Option.isSome(o.limit) ? { limit: o.limit.value } : {})
    }
    const page = o.kind === "video" ? yield* listVideoTasks(params) : yield* listImageTasks(params)
    yield* output(o, page, () => [
      ...page.data.map((t) => `${t.id}  ${t.status.padEnd(11)} ${String(t.progress).padStart(3)}%  ${t.model}`),
      ...(page.has_more ? [`more: --after ${page.last_id}`] : [])
    ])
  }).pipe(withGateway(o, ["resource"]))).pipe(Command.withDescription("List your tasks, newest first."))

const get = Command.make("get", { ...common, kind: kindOption, taskId }, (o) =>
  Effect.gen(function*() {
    const { task } = yield* getTask(yield* kindOf(o.kind, o.taskId), o.taskId)
    yield* printTask(o, task, [])
  }).pipe(withGateway(o, ["resource"]))).pipe(Command.withDescription("Show a task."))

const watch = Command.make("watch", {
  ...common,
  kind: kindOption,
  taskId,
  out: createOptions.out,
  timeout: createOptions.timeout
}, (o) =>
  Effect.gen(function*() {
    yield* watchTask(o, yield* kindOf(o.kind, o.taskId), o.taskId, o)
  }).pipe(withGateway(o, ["resource"]))).pipe(
    Command.withDescription(
      "Follow a task with progress until it ends; --out downloads its results. Exit 1 if it failed."
    )
  )

export const tasks = Command.make("tasks").pipe(
  Command.withDescription("Your video and image tasks."),
  Command.withSubcommands([list, get, watch])
)
