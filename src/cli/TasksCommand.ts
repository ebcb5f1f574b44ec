import { Args, Command, Options } from "@effect/cli"
import { Effect, Option } from "effect"
import { type AnyTask, cancelTask, getTask, listImageTasks, listVideoTasks } from "../client/Tasks.ts"
import type { TaskKind } from "../tasks/Task.ts"
import { common, output, withGateway } from "./Common.ts"
import { printTask, watchTask } from "./TaskFlow.ts"
import { DEFAULT_LIMIT, kindOfTask, listBothKinds } from "./TaskList.ts"
import { createOptions } from "./VideoCommand.ts"

const kindOption = Options.choice("kind", ["video", "image"]).pipe(
  Options.optional,
  Options.withDescription("The task's kind; without it the id is looked up as a video task, then as an image task.")
)

const taskId = Args.text({ name: "task_id" }).pipe(Args.withDescription("The task's id (task_…)."))

/** Which kind a task id is: the one asked for, else video unless no video task has that id. */
const kindOf = (kind: Option.Option<TaskKind>, id: string) =>
  Option.isSome(kind)
    ? Effect.succeed(kind.value)
    : getTask("video", id).pipe(
      Effect.as("video" as TaskKind),
      Effect.catchIf((e) => e._tag === "GatewayError" && e.code === "task_not_found", () =>
        Effect.succeed("image" as TaskKind))
    )

/** One line of the human listing: id, kind, status, progress, model. */
const taskLine = (t: AnyTask) =>
  `${t.id}  ${kindOfTask(t).padEnd(5)}  ${t.status.padEnd(11)} ${String(t.progress).padStart(3)}%  ${t.model}`

const list = Command.make("list", {
  ...common,
  kind: Options.choice("kind", ["video", "image"]).pipe(
    Options.optional,
    Options.withDescription("Only video or only image tasks. Without it, both kinds, merged newest first.")
  ),
  status: Options.choice("status", ["queued", "in_progress", "succeeded", "failed"]).pipe(
    Options.optional,
    Options.withDescription("Only tasks in this state.")
  ),
  clientReferenceId: Options.text("client-reference-id").pipe(
    Options.withPseudoName("ID"),
    Options.optional,
    Options.withDescription("Only tasks created with this client_reference_id.")
  ),
  after: Options.text("after").pipe(
    Options.withPseudoName("CURSOR"),
    Options.optional,
    Options.withDescription(
      "Continue from the previous page: the value its last line (`more: --after …`) or --json's next_after gives. With --kind, a task id of that kind; without it, VIDEO_ID,IMAGE_ID."
    )
  ),
  limit: Options.integer("limit").pipe(
    Options.optional,
    Options.withDescription(`Page size, 1 to 100 (default ${DEFAULT_LIMIT}).`)
  )
}, (o) =>
  Effect.gen(function*() {
    const filter = {
      ...(Option.isSome(o.status) ? { status: o.status.value } : {}),
      ...(Option.isSome(o.clientReferenceId) ? { client_reference_id: o.clientReferenceId.value } : {})
    }
    const after = Option.getOrUndefined(o.after)
    const limit = Option.getOrElse(o.limit, () => DEFAULT_LIMIT)
    const page = Option.isNone(o.kind)
      ? yield* listBothKinds(filter, after, limit)
      : yield* (o.kind.value === "video" ? listVideoTasks : listImageTasks)({
        ...filter,
        limit,
        ...(after === undefined ? {} : { after })
      })
    const next = "next_after" in page ? page.next_after : page.has_more ? page.last_id : null
    yield* output(o, page, () => [...page.data.map(taskLine), ...(next === null ? [] : [`more: --after ${next}`])])
  }).pipe(withGateway(o, ["resource"]))).pipe(
    Command.withDescription(
      "List your tasks, newest first, a page at a time: video and image tasks together, or one kind with --kind."
    )
  )

const get = Command.make("get", { ...common, kind: kindOption, taskId }, (o) =>
  Effect.gen(function*() {
    const { task } = yield* getTask(yield* kindOf(o.kind, o.taskId), o.taskId)
    yield* printTask(o, task, [])
  }).pipe(withGateway(o, ["resource"]))).pipe(
    Command.withDescription("Show a task: its state and progress, and its result URLs once it succeeded.")
  )

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
      "Follow a task with progress until it ends and print the outcome; --out downloads its results. Exits 1 if the task failed."
    )
  )

const cancel = Command.make("cancel", { ...common, kind: kindOption, taskId }, (o) =>
  Effect.gen(function*() {
    const task = yield* cancelTask(yield* kindOf(o.kind, o.taskId), o.taskId)
    yield* printTask(o, task, [])
  }).pipe(withGateway(o, ["resource"]))).pipe(
    Command.withDescription(
      "Cancel a task: one no provider has started ends at once, refunded in full; one a provider runs is cancelled there where the provider can. Fails with task_not_cancellable (and the reason) otherwise."
    )
  )

export const tasks = Command.make("tasks").pipe(
  Command.withDescription("Your video and image tasks."),
  Command.withSubcommands([list, get, watch, cancel])
)
