import { makeRunMain } from "@effect/platform/Runtime"

/**
 * `runMain` on Deno's own signal API: SIGTERM or SIGINT interrupts the main
 * fiber once, so its layers close in reverse order (the server drains, tasks
 * go back to the queue, the database closes); a second signal is left to the
 * default action. The process exits with the teardown's code when a signal
 * ended it or the program failed, as NodeRuntime.runMain does.
 */
export const runMain = makeRunMain(({ fiber, teardown }) => {
  // An interval keeps the event loop alive while the program only waits (e.g. a worker between polls).
  const keepAlive = setInterval(() => {}, 2 ** 31 - 1)
  let receivedSignal = false
  const signals = ["SIGINT", "SIGTERM"] as const
  const onSignal = () => {
    receivedSignal = true
    for (const signal of signals) Deno.removeSignalListener(signal, onSignal)
    fiber.unsafeInterruptAsFork(fiber.id())
  }
  for (const signal of signals) Deno.addSignalListener(signal, onSignal)
  fiber.addObserver((exit) => {
    if (!receivedSignal) { for (const signal of signals) Deno.removeSignalListener(signal, onSignal) }
    clearInterval(keepAlive)
    teardown(exit, (code) => {
      if (receivedSignal || code !== 0) Deno.exit(code)
    })
  })
})
