import { Effect, Option } from "effect"
import { downloadTaskResults } from "../client/Download.ts"
import type { AnyTask, TaskReply } from "../client/Tasks.ts"
import { watchUntilDone } from "../client/Watch.ts"
import type { TaskKind } from "../tasks/Task.ts"
import { type Common, output } from "./Common.ts"
import { makeProgress } from "./Progress.ts"

export interface FinishOptions {
  readonly wait: boolean
  readonly out: Option.Option<string>
  /** Seconds before `--wait` gives up (the task goes on). */
  readonly timeout: Option.Option<number>
}

const resultUrls = (task: AnyTask) =>
  task.result === null
    ? []
    : ("videos" in task.result ? task.result.videos : task.result.images).map((item) => item.url)

/** What a finished command prints: `{ task, files }` with `--json`, else the task's state and its files or URLs. */
export const printTask = (options: Common, task: AnyTask, files: ReadonlyArray<string>) =>
  output(options, { task, files }, () => [
    `${task.id} ${task.status}${task.status === "succeeded" || task.status === "failed" ? "" : ` ${task.progress}%`}`,
    ...(files.length > 0 ? files : resultUrls(task))
  ])

/**
 * Waits for a task with a progress display, then downloads its results into
 * `out` when given. A failed task is printed (so `--json` still gives the
 * task) and then fails the command with `TaskFailed`, which exits 1.
 */
export const watchTask = (
  options: Common,
  kind: TaskKind,
  id: string,
  finish: Omit<FinishOptions, "wait">
) =>
  Effect.gen(function*() {
    const progress = yield* makeProgress({ json: options.json })
    let last: AnyTask | undefined
    // The live status stream (reconnected on a dropped connection), not polling: each change shows at once.
    const task = yield* watchUntilDone(kind, id, {
      timeout: Option.isSome(finish.timeout) ? `${finish.timeout.value} seconds` : undefined,
      onProgress: (state: AnyTask) => {
        last = state
        progress.update(state.progress, `${state.id} ${state.status}`)
      }
    }).pipe(
      Effect.ensuring(Effect.sync(progress.done)),
      Effect.tapErrorTag("TaskFailed", () => last === undefined ? Effect.void : printTask(options, last, []))
    )
    if (Option.isNone(finish.out)) return yield* printTask(options, task, [])
    const download = yield* makeProgress({ json: options.json, step: 10 })
    const files = yield* downloadTaskResults(task, finish.out.value, {
      onProgress: (received, total) =>
        download.update(total === undefined ? 0 : (received / total) * 100, `downloading ${task.id}`)
    }).pipe(Effect.ensuring(Effect.sync(download.done)))
    yield* printTask(options, task, files)
  })

/** After a create: print the queued task, or watch it with `--wait` / `--out`. */
export const finishCreate = <T extends AnyTask>(
  options: Common,
  kind: TaskKind,
  reply: TaskReply<T>,
  finish: FinishOptions
) =>
  finish.wait || Option.isSome(finish.out)
    ? watchTask(options, kind, reply.task.id, finish)
    : printTask(options, reply.task, [])
