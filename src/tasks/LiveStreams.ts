import { Chunk, Context, Effect, Layer, Option, Schedule, Schema, Stream } from "effect"
import type { RateLimited } from "../accounts/Errors.ts"
import { AppConfig } from "../platform/AppConfig.ts"
import { Draining } from "../platform/http/Draining.ts"
import type { StreamedBody } from "../platform/http/FastRoutes.ts"
import { StreamSlots } from "./StreamSlots.ts"
import { ImageTask, type TaskKind, VideoTask } from "./Task.ts"
import { TaskWait } from "./TaskWait.ts"
import { isSettled, type Observed } from "./TaskWatchers.ts"

const utf8 = new TextEncoder()
const OPEN = utf8.encode(": open\n\n")
const KEEP_ALIVE = utf8.encode(": keep-alive\n\n")

const encoders: Record<TaskKind, (task: VideoTask | ImageTask) => unknown> = {
  video: Schema.encodeUnknownSync(VideoTask),
  image: Schema.encodeUnknownSync(ImageTask)
}

/**
 * Each state read is encoded once, however many streams send it: the
 * watcher hands the same Observed to every follower of its task (weakly
 * held, so it goes with the last stream that had it pending).
 */
const encoded = new WeakMap<Observed, Uint8Array>()

/** One `task` event: the id is the task's change sequence, the data the query endpoint's object. */
const taskEvent = (kind: TaskKind, seen: Observed) => {
  let event = encoded.get(seen)
  if (event === undefined) {
    const json = JSON.stringify(encoders[kind](seen.task))
    event = utf8.encode(`id: ${seen.seq}\nevent: task\ndata: ${json}\n\n`)
    encoded.set(seen, event)
  }
  return event
}

/** Where a pulled chunk goes; null once the body is complete. */
type Deliver = (chunk: Uint8Array | null) => void

/**
 * One open live status stream, as plain state rather than fibers and
 * timers: the server pulls its next chunk only once the socket took the
 * last (Node's `drain`), and a pull with nothing to send waits until the
 * watcher offers a state, the ticker a keep-alive, or the server drains.
 * What waits to be written is at most the newest state not yet sent and a
 * keep-alive flag: a client that does not read holds up one pending event,
 * never a growing buffer (changes that came meanwhile are merged into the
 * last of them).
 *
 * Two ways to be written: `body` for an answer through the HttpApi stack
 * (an Effect Stream; the request's fiber is what a stalled client's drop
 * interrupts), and `served` for the server's own writing
 * (platform/http/FastRoutes.ts: no fiber per stream at all).
 */
export class LiveStream {
  /** The `: open` comment is still to go out first. */
  private opening = true
  /** `seq` of the last state taken (sent, or skipped as the client's Last-Event-ID). */
  private seen: number | undefined
  private pending: Observed | undefined
  private keepAliveDue = false
  /** The body ends once what is pending went out: a terminal state was taken, the task is gone, or the server drains. */
  private ending = false
  private waiting: Deliver | undefined
  /** Ticks since the last keep-alive. */
  private quiet = 0
  /** Ticks since a chunk was handed over with no pull since; -1 while a pull waits (the socket took everything). */
  private handed = -1
  /** Cuts the answer short: set by whoever writes it. */
  private abort: () => void = () => {}

  constructor(
    private readonly kind: TaskKind,
    /** The client's Last-Event-ID: a first state with this `seq` is not sent again. */
    private readonly after: number | undefined
  ) {}

  /** A state of the task as read (undefined: no such task for this caller): the stream's listener. */
  readonly offer = (seen: Observed | undefined) => {
    if (this.ending) return
    if (seen === undefined) this.ending = true
    else if (seen.seq === this.seen) return
    else if (this.seen === undefined && seen.seq === this.after) {
      // A client resuming at the current state: nothing to send until it changes.
      this.seen = seen.seq
      if (isSettled(seen.task)) this.ending = true
    } else {
      this.seen = seen.seq
      this.pending = seen
    }
    this.wake()
  }

  /** Ends the stream now, whatever is pending (the server drains). */
  end() {
    this.opening = false
    this.pending = undefined
    this.keepAliveDue = false
    this.ending = true
    this.wake()
  }

  /** One tick of the process's ticker: a keep-alive when due; a client that took nothing for `stall` ticks is cut. */
  tick(keepAlive: number, stall: number) {
    if (++this.quiet >= keepAlive) {
      this.quiet = 0
      this.keepAliveDue = true
      this.wake()
    }
    if (this.handed >= 0 && ++this.handed >= stall) {
      this.handed = -1
      this.abort()
    }
  }

  /** The next chunk, null at the end, undefined for nothing yet; handing one over starts the stall count. */
  private take(): Uint8Array | null | undefined {
    let chunk: Uint8Array
    if (this.opening) {
      this.opening = false
      chunk = OPEN
    } else if (this.pending !== undefined) {
      const seen = this.pending
      this.pending = undefined
      if (isSettled(seen.task)) this.ending = true
      chunk = taskEvent(this.kind, seen)
    } else if (this.keepAliveDue) {
      this.keepAliveDue = false
      chunk = KEEP_ALIVE
    } else {
      return this.ending ? null : undefined
    }
    this.handed = 0
    return chunk
  }

  /** The socket took the last chunk: `deliver` gets the next, now or once there is one. */
  private pull(deliver: Deliver) {
    this.handed = -1
    const next = this.take()
    if (next === undefined) this.waiting = deliver
    else deliver(next)
  }

  private wake() {
    const deliver = this.waiting
    if (deliver === undefined) return
    const next = this.take()
    if (next === undefined) return
    this.waiting = undefined
    deliver(next)
  }

  /** The answer's body through the HttpApi stack; a stalled client interrupts `fiber` (the request's). */
  body(interrupt: () => void): Stream.Stream<Uint8Array> {
    this.abort = interrupt
    return Stream.repeatEffectChunkOption(
      Effect.async<Chunk.Chunk<Uint8Array>, Option.Option<never>>((resume) => {
        this.pull((chunk) => resume(chunk === null ? Effect.fail(Option.none()) : Effect.succeed(Chunk.of(chunk))))
        return Effect.sync(() => (this.waiting = undefined))
      })
    )
  }

  /** The body as the server writes it itself; `close` is called once the answer is over, however it ended. */
  served(close: () => void): StreamedBody {
    return {
      start: (abort) => (this.abort = abort),
      pull: (deliver) => this.pull(deliver),
      close
    }
  }
}

/**
 * The live status streams open in this process, kept as plain objects
 * (LiveStream) and served by two fibers for all of them, not fibers and
 * timers per stream: a ticker (every second, or more often when the
 * configured times are shorter) that sends each stream its keep-alive every
 * `stream_keep_alive_s` and cuts a stream whose client has taken nothing
 * for `stream_stall_s` (which ends the stream, its following and its slot,
 * and closes the connection); and the server's drain, which ends every
 * stream cleanly. A stream is registered for the scope it is opened in.
 */
export class LiveStreams extends Context.Tag("LiveStreams")<LiveStreams, {
  /** A stream of a `kind` task, registered until the function returned beside it is called. */
  readonly open: (kind: TaskKind, after: number | undefined) => Effect.Effect<readonly [LiveStream, () => void]>
}>() {
  static readonly layer = Layer.scoped(
    LiveStreams,
    Effect.gen(function*() {
      const { limits } = yield* AppConfig
      const draining = yield* Draining
      const streams = new Set<LiveStream>()
      let drained = false
      const tickMs = Math.min(1000, limits.stream_keep_alive_s * 1000, limits.stream_stall_s * 1000)
      const keepAlive = Math.max(1, Math.round((limits.stream_keep_alive_s * 1000) / tickMs))
      const stall = Math.max(1, Math.round((limits.stream_stall_s * 1000) / tickMs))
      const tick = Effect.sync(() => {
        for (const stream of streams) stream.tick(keepAlive, stall)
      })
      yield* Effect.forkScoped(Effect.repeat(tick, Schedule.spaced(tickMs)))
      yield* Effect.forkScoped(Effect.zipRight(
        draining.started,
        Effect.sync(() => {
          drained = true
          for (const stream of streams) stream.end()
        })
      ))
      const open = (kind: TaskKind, after: number | undefined) =>
        Effect.sync(() => {
          const stream = new LiveStream(kind, after)
          streams.add(stream)
          if (drained) stream.end()
          return [stream, () => void streams.delete(stream)] as const
        })
      return { open }
    })
  )
}

/** The headers of a live status answer's content, whichever path serves it. */
export const STREAM_HEADERS = {
  "content-type": "text/event-stream",
  "cache-control": "no-store",
  "x-accel-buffering": "no"
} as const

/** `Last-Event-ID` as a change sequence; anything else (absent, not a plain integer) is no id. */
export const lastEventId = (header: string | undefined): number | undefined =>
  header !== undefined && /^\d{1,9}$/.test(header.trim()) ? Number(header.trim()) : undefined

/**
 * The live status stream of a task already found to be the caller's: a slot
 * of `slotKey`'s bound is taken (429 past it) before anything is sent, then
 * the stream follows the task through the process's shared watcher of it
 * (TaskWait.follow). `close` gives back the slot, the stream's registration
 * and its following, once. Plain functions rather than a scope: a scope's
 * finalizers keep the fiber's references and context of the moment they
 * were added (with the request's span), which for thousands of idle streams
 * was most of their memory. Shared by the fast route (FastTaskEvents.ts),
 * the contract's endpoints and the console's.
 */
export const openLiveStream = (
  slotKey: string,
  accountId: string,
  kind: TaskKind,
  id: string,
  after: number | undefined
): Effect.Effect<
  { readonly stream: LiveStream; readonly close: () => void },
  RateLimited,
  StreamSlots | LiveStreams | TaskWait
> =>
  Effect.uninterruptible(Effect.gen(function*() {
    const giveSlot = yield* (yield* StreamSlots).hold(slotKey)
    const [stream, unregister] = yield* (yield* LiveStreams).open(kind, after)
    const stop = yield* (yield* TaskWait).follow(accountId, kind, id, stream.offer)
    let closed = false
    const close = () => {
      if (closed) return
      closed = true
      stop()
      unregister()
      giveSlot()
    }
    return { stream, close }
  }))
