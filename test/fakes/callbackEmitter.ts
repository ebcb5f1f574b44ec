import { Webhook } from "standardwebhooks"

/**
 * The callback emitter of the fake upstreams (docs/adapters/ark.md and
 * docs/adapters/kling.md, Callbacks and Tests): POSTs a task's object to its
 * `callback_url` on each status change, the way a test asks: each change once,
 * twice, all in reverse order at the end, or never; a receiver's non-2xx is
 * retried a few times. Kling's are signed with Standard Webhooks headers (by
 * the reference `standardwebhooks` package, so the gateway's verifier is
 * checked against it): valid, with a wrong secret, with a stale timestamp, or
 * two signatures as during a rotation.
 */

export type Delivery = "each" | "duplicate" | "reorder" | "none"
export type Signature = "valid" | "invalid" | "stale" | "rotation" | "none"

export interface CallbackOptions {
  delivery: Delivery
  signature: Signature
  /** The `whsec_…` secret signatures are made with (Kling's console secret). */
  secret: string | undefined
}

export interface Delivered {
  readonly at: number
  readonly url: string
  readonly body: any
  readonly headers: Record<string, string>
  readonly status: number
}

const OTHER_SECRET = "whsec_" + Buffer.from("a secret the gateway does not know!").toString("base64")

/** Standard Webhooks headers for a body, as `options.signature` asks. */
export const signatureHeaders = (
  options: Pick<CallbackOptions, "signature" | "secret">,
  text: string,
  id: string
): Record<string, string> => {
  if (options.signature === "none" || options.secret === undefined) return {}
  const stale = options.signature === "stale"
  const at = new Date(Date.now() - (stale ? 10 * 60_000 : 0))
  const ts = String(Math.floor(at.getTime() / 1000))
  const sign = (secret: string) => new Webhook(secret).sign(id, at, text)
  const signature = options.signature === "invalid"
    ? sign(OTHER_SECRET)
    : options.signature === "rotation"
    ? `${sign(OTHER_SECRET)} ${sign(options.secret)}`
    : sign(options.secret)
  return { "webhook-id": id, "webhook-timestamp": ts, "webhook-signature": signature }
}

/**
 * The moments (ms after creation) a time-driven timeline changes status:
 * observation `n` is reached at `(n - 1) * stepMs`; `statusAt(n)` says the
 * status then, up to `last` observations.
 */
export const changeTimes = (stepMs: number, last: number, statusAt: (n: number) => string) => {
  const times: Array<number> = []
  for (let n = 1; n <= last; n++) if (n === 1 || statusAt(n) !== statusAt(n - 1)) times.push((n - 1) * stepMs)
  return times
}

export const makeEmitter = () => {
  const options: CallbackOptions = { delivery: "each", signature: "valid", secret: undefined }
  const delivered: Array<Delivered> = []
  const timers = new Set<NodeJS.Timeout>()
  let sequence = 0

  const post = async (url: string, body: unknown, tries = 3): Promise<void> => {
    const text = JSON.stringify(body)
    const headers = { "content-type": "application/json", ...signatureHeaders(options, text, `msg_${++sequence}`) }
    const status = await fetch(url, { method: "POST", headers, body: text, signal: AbortSignal.timeout(5000) })
      .then(async (r) => (await r.arrayBuffer(), r.status))
      .catch(() => 0)
    delivered.push({ at: Date.now(), url, body, headers, status })
    if ((status < 200 || status > 299) && tries > 1) {
      return new Promise((done) => later(200, () => post(url, body, tries - 1).then(done)))
    }
  }

  const later = (ms: number, f: () => void) => {
    const timer = setTimeout(() => {
      timers.delete(timer)
      f()
    }, ms)
    timers.add(timer)
  }

  /**
   * Schedules the callbacks of one task: `changes` are the times (ms from
   * now) its status changes, and `objectNow` the task object at a moment.
   */
  const schedule = (url: string, changes: ReadonlyArray<number>, objectNow: () => unknown) => {
    const { delivery } = options
    if (delivery === "none") return
    if (delivery === "reorder") {
      // Every change's object, sent newest first once the last change has happened.
      const objects: Array<unknown> = []
      changes.forEach((ms, i) =>
        later(ms, () => {
          objects.push(objectNow())
          if (i === changes.length - 1) {
            void objects.reverse().reduce<Promise<void>>((p, o) => p.then(() => post(url, o)), Promise.resolve())
          }
        })
      )
      return
    }
    for (const ms of changes) {
      later(ms, () => {
        const object = objectNow()
        void post(url, object).then(() => (delivery === "duplicate" ? post(url, object) : undefined))
      })
    }
  }

  return { options, delivered, schedule, close: () => timers.forEach(clearTimeout) }
}

export type Emitter = ReturnType<typeof makeEmitter>
