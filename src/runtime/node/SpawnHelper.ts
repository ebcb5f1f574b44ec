import { type Command, CommandExecutor } from "@effect/platform"
import { type PlatformError, SystemError, type SystemErrorReason } from "@effect/platform/Error"
import { Deferred, Effect, Inspectable, Layer, Option, Queue, Sink, Stream } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import { SPAWN_HELPER_PROGRAM } from "./SpawnHelperProgram.ts"

/**
 * Child processes (ffprobe for every inspected file, ffmpeg for the
 * sandbox) started by a small helper process instead of by the service.
 *
 * Why: Node 20 starts a child with fork(), on the main thread, which waits
 * until the child has exec'd; the fork copies the page tables of the whole
 * process. In a worker grown to a few hundred MB that cost 14 to 19 ms of
 * the event loop per ffprobe, 17 % of the worker's CPU in
 * bench/engine-throughput.ts, where the worker's one thread is the limit.
 * The helper is a bare Node process (about 40 MB) started once, at the first
 * command: its forks are cheap and none of their cost is on the service's
 * event loop.
 *
 * It serves what the service runs: a plain command (no shell, no pipeline)
 * whose stdin is a pipe (the default) and whose outputs are piped, ignored
 * or inherited. Anything else goes to the platform's own executor, as does
 * everything on Deno, whose child processes do not fork the runtime.
 * Semantics follow the platform's Node executor: own process group, SIGTERM
 * to the group when the scope closes early, exit code or a failure naming
 * the signal. If the helper dies, what it was running fails (a tool error,
 * retried like any other) and the next command starts a new helper.
 */

type Output = { readonly end: PlatformError | undefined }
type Message =
  | { readonly id: number; readonly ev: "spawn"; readonly pid: number }
  | { readonly id: number; readonly ev: "error"; readonly code?: string; readonly message: string }
  | { readonly id: number; readonly ev: "exit"; readonly code: number | null; readonly signal: string | null }
  | { readonly id: number; readonly ev: "out" | "err"; readonly data: Uint8Array }
  | { readonly id: number; readonly ev: "out-end" | "err-end" }
  | { readonly id: number; readonly ev: "in-ack"; readonly error?: string }

interface Running {
  readonly description: string
  readonly spawned: Deferred.Deferred<number, PlatformError>
  readonly exited: Deferred.Deferred<readonly [number | null, string | null], PlatformError>
  readonly out: Queue.Queue<Uint8Array | Output>
  readonly err: Queue.Queue<Uint8Array | Output>
  readonly stdinAcks: Queue.Queue<string | undefined>
  /** Whether the helper reported the spawn; an error before it means the command never ran. */
  started: boolean
  /** What is still to come: the exit and the end of each output. */
  open: number
}

const REASONS: Record<string, SystemErrorReason> = { ENOENT: "NotFound", EACCES: "PermissionDenied" }

const failure = (method: string, description: string, command: string, code?: string) =>
  new SystemError({
    reason: (code !== undefined ? REASONS[code] : undefined) ?? "Unknown",
    module: "Command",
    method,
    pathOrDescriptor: command,
    description
  })

const ProcessProto = {
  [CommandExecutor.ProcessTypeId]: CommandExecutor.ProcessTypeId,
  ...Inspectable.BaseProto,
  toJSON(this: { pid: number }) {
    return { _id: "@effect/platform/CommandExecutor/Process", pid: this.pid }
  }
}

/** Whether the helper can run `command` exactly as the platform's executor would. */
const servable = (command: Command.Command): command is Command.StandardCommand =>
  command._tag === "StandardCommand" && command.shell === false &&
  command.stdin === "pipe" &&
  typeof command.stdout === "string" && typeof command.stderr === "string"

/** The helper process and the commands it runs; started on first use, again after it died. */
class Helper {
  private child: ChildProcess | undefined
  private readonly running = new Map<number, Running>()
  private nextId = 0

  private ensure(): ChildProcess {
    if (this.child) return this.child
    const child = spawn(process.execPath, ["-e", SPAWN_HELPER_PROGRAM], {
      stdio: ["ignore", "inherit", "inherit", "ipc"],
      serialization: "advanced"
    })
    child.on("message", (m: Message) => this.receive(m))
    child.on("exit", () => this.lost(child))
    child.on("error", () => this.lost(child))
    // Only commands in flight keep the service's event loop alive, not the idle helper.
    child.unref()
    child.channel?.unref()
    this.child = child
    return child
  }

  /** Every command of a helper that is gone fails; the next one starts a new helper. */
  private lost(child: ChildProcess) {
    if (this.child !== child) return
    this.child = undefined
    for (const [id, r] of this.running) {
      const gone = failure("spawn", "the spawn helper exited", r.description)
      Deferred.unsafeDone(r.spawned, Effect.fail(gone))
      Deferred.unsafeDone(r.exited, Effect.fail(gone))
      r.out.unsafeOffer({ end: gone })
      r.err.unsafeOffer({ end: gone })
      r.stdinAcks.unsafeOffer("the spawn helper exited")
      this.forget(id)
    }
  }

  private forget(id: number) {
    if (this.running.delete(id) && this.running.size === 0) this.child?.channel?.unref()
  }

  /** Done with a command once it has exited and both its outputs have ended. */
  private close(id: number, r: Running) {
    if (--r.open === 0) this.forget(id)
  }

  private receive(m: Message) {
    const r = this.running.get(m.id)
    if (!r) return
    switch (m.ev) {
      case "spawn":
        r.started = true
        return Deferred.unsafeDone(r.spawned, Effect.succeed(m.pid))
      case "error": {
        // An error after the spawn (a failed kill) changes nothing the caller waits for.
        if (r.started) return
        const error = failure("spawn", m.message, r.description, m.code)
        Deferred.unsafeDone(r.spawned, Effect.fail(error))
        Deferred.unsafeDone(r.exited, Effect.fail(error))
        return this.forget(m.id)
      }
      case "exit":
        Deferred.unsafeDone(r.exited, Effect.succeed([m.code, m.signal] as const))
        return this.close(m.id, r)
      case "out":
      case "err":
        ;(m.ev === "out" ? r.out : r.err).unsafeOffer(new Uint8Array(m.data.buffer, m.data.byteOffset, m.data.length))
        return
      case "out-end":
      case "err-end":
        ;(m.ev === "out-end" ? r.out : r.err).unsafeOffer({ end: undefined })
        return this.close(m.id, r)
      case "in-ack":
        return r.stdinAcks.unsafeOffer(m.error)
    }
  }

  send(message: Record<string, unknown>) {
    // A helper that is gone has failed its commands already; what was meant for it no longer matters.
    if (this.child?.connected) this.child.send(message)
  }

  start(command: Command.StandardCommand, running: Running): number {
    const child = this.ensure()
    const id = this.nextId++
    this.running.set(id, running)
    if (this.running.size === 1) child.channel?.ref()
    const env = command.extendEnv
      ? { ...process.env, ...Object.fromEntries(command.env) }
      : Object.fromEntries(command.env)
    this.send({
      op: "start",
      id,
      command: command.command,
      args: command.args,
      cwd: Option.getOrUndefined(command.cwd),
      env,
      stdio: [command.stdin, command.stdout, command.stderr]
    })
    return id
  }

  shutdown() {
    // The helper kills what it still runs when its channel closes.
    if (this.child?.connected) this.child.disconnect()
    this.child = undefined
  }
}

const runCommand = (helper: Helper) => (command: Command.StandardCommand) =>
  Effect.gen(function*() {
    const running: Running = {
      description: [command.command, ...command.args].join(" "),
      spawned: yield* Deferred.make<number, PlatformError>(),
      exited: yield* Deferred.make<readonly [number | null, string | null], PlatformError>(),
      out: yield* Queue.unbounded<Uint8Array | Output>(),
      err: yield* Queue.unbounded<Uint8Array | Output>(),
      stdinAcks: yield* Queue.unbounded<string | undefined>(),
      started: false,
      open: 3
    }
    const id = helper.start(command, running)
    /** Sends `signal` to the command's process group, through the helper. */
    const signalGroup = (signal: CommandExecutor.Signal) => Effect.sync(() => helper.send({ op: "kill", id, signal }))
    const kill = (signal: CommandExecutor.Signal = "SIGTERM") =>
      signalGroup(signal).pipe(Effect.zipRight(Deferred.await(running.exited)))

    const pid = yield* Effect.acquireRelease(
      Deferred.await(running.spawned).pipe(Effect.onInterrupt(() => signalGroup("SIGTERM"))),
      () =>
        Effect.flatMap(Deferred.isDone(running.exited), (done) =>
          done
            // Exited: a failure may have left the group's other members behind.
            ? Effect.flatMap(Deferred.await(running.exited), ([code]) =>
              code !== 0 && code !== null ? signalGroup("SIGTERM") : Effect.void)
            : kill("SIGTERM")).pipe(Effect.ignore)
    )

    const output = (queue: Queue.Queue<Uint8Array | Output>, stream: "out" | "err") =>
      Stream.repeatEffectOption(
        Effect.flatMap(Queue.take(queue), (item) =>
          item instanceof Uint8Array
            ? Effect.succeed(item)
            : item.end === undefined
            ? Effect.fail(Option.none())
            : Effect.fail(Option.some(item.end)))
      ).pipe(Stream.tap((chunk) =>
        Effect.sync(() => helper.send({ op: "ack", id, stream, bytes: chunk.byteLength }))
      ))

    // A write waits for the helper's acknowledgement, or for the exit: once the command is done
    // its acknowledgements are no longer routed, and a write to an exited process fails.
    const exited = "the process has exited"
    const exitedWhileWriting = Effect.as(Deferred.await(running.exited), exited)
    const stdin: Sink.Sink<void, Uint8Array, never, PlatformError> = Sink.forEach((chunk: Uint8Array) =>
      Effect.flatMap(Deferred.isDone(running.exited), (done) =>
        done
          ? Effect.succeed<string | undefined>(exited)
          : Effect.sync(() => helper.send({ op: "stdin", id, data: chunk })).pipe(
            Effect.zipRight(Effect.raceFirst(Queue.take(running.stdinAcks), exitedWhileWriting))
          )).pipe(
          Effect.catchAll((error) => Effect.succeed(error.message)),
          Effect.flatMap((error) =>
            error === undefined ? Effect.void : Effect.fail(failure("toWritable", error, running.description))
          )
        )
    ).pipe(Sink.ensuring(Effect.sync(() => helper.send({ op: "stdin-end", id }))))

    const exitCode = Effect.flatMap(Deferred.await(running.exited), ([code, signal]) =>
      code !== null
        ? Effect.succeed(CommandExecutor.ExitCode(code))
        : Effect.fail(
          failure("exitCode", `Process interrupted due to receipt of signal: ${signal}`, running.description)
        ))

    const proc: CommandExecutor.Process = Object.assign(Object.create(ProcessProto), {
      pid: CommandExecutor.ProcessId(pid),
      exitCode,
      isRunning: Effect.negate(Deferred.isDone(running.exited)),
      kill,
      stdin,
      stdout: output(running.out, "out"),
      stderr: output(running.err, "err")
    })
    return proc
  })

/**
 * A CommandExecutor that runs what it can through the spawn helper and the
 * rest through the executor it is given (the platform's); the helper stops
 * with the layer.
 */
export const SpawnHelperLive = Layer.scoped(
  CommandExecutor.CommandExecutor,
  Effect.gen(function*() {
    const fallback = yield* CommandExecutor.CommandExecutor
    const helper = yield* Effect.acquireRelease(Effect.sync(() => new Helper()), (h) => Effect.sync(() => h.shutdown()))
    const viaHelper = runCommand(helper)
    return CommandExecutor.makeExecutor((command) => servable(command) ? viaHelper(command) : fallback.start(command))
  })
)
