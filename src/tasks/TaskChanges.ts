import { Effect, Schedule, type Scope, Stream } from "effect"
import { makeListen } from "../platform/Notifications.ts"

/** The NOTIFY channel the tasks table's trigger signals a task's change of status or progress on; the payload is its id. */
export const TASK_CHANGED_CHANNEL = "task_changed"

/**
 * The process's one LISTEN on `task_changed`, forked into the scope:
 * `changed` with each task id announced, `missed` each time the listener
 * (re)starts, since notifications sent while it was away are lost. A hint
 * only: whoever uses it also re-reads on a schedule of its own, so a lost
 * listener delays an answer but never loses it. A listener that fails is
 * started again after a second.
 */
export const listenTaskChanges = (
  changed: (taskId: string) => void,
  missed: () => void
): Effect.Effect<void, never, Scope.Scope | Effect.Effect.Context<typeof makeListen>> =>
  Effect.gen(function*() {
    const listen = yield* makeListen
    yield* listen(TASK_CHANGED_CHANNEL).pipe(
      Stream.onStart(Effect.sync(missed)),
      Stream.runForEach((taskId) => Effect.sync(() => changed(taskId))),
      Effect.retry(Schedule.spaced("1 second")),
      Effect.ignore,
      Effect.forkScoped
    )
  })
