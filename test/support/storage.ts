import { Clock, Effect } from "effect"
import { writeFileSync } from "node:fs"
import { join } from "node:path"
import { ObjectStorage, type ObjectStorageService } from "../../src/storage/ObjectStorage.ts"
import type { TestGateway } from "./gateway.ts"
import type { RawReply } from "./http.ts"

/** Runs `f` with the gateway's own ObjectStorage service. */
export const withStorage = <A, E>(gw: TestGateway, f: (storage: ObjectStorageService) => Effect.Effect<A, E>) =>
  gw.runtime.runPromise(Effect.flatMap(ObjectStorage, f)) as Promise<A>

let sources = 0

/** A file of `data` in the gateway's data directory, outside the store, as putFile's source; its path. */
export const sourceFile = (gw: TestGateway, data: Uint8Array) => {
  const path = join(gw.dataDir, `source-${++sources}.bin`)
  writeFileSync(path, data)
  return path
}

/** A clock `offsetS` seconds off the real one: URLs signed under it are already expired, without waiting. */
export const shiftedClock = (offsetS: number): Clock.Clock => {
  const real = Clock.make()
  const millis = () => real.unsafeCurrentTimeMillis() + offsetS * 1000
  return {
    [Clock.ClockTypeId]: Clock.ClockTypeId,
    unsafeCurrentTimeMillis: millis,
    currentTimeMillis: Effect.sync(millis),
    unsafeCurrentTimeNanos: () => BigInt(millis()) * 1_000_000n,
    currentTimeNanos: Effect.sync(() => BigInt(millis()) * 1_000_000n),
    sleep: (duration) => real.sleep(duration)
  }
}

/** `size` random bytes (getRandomValues fills at most 64 KiB per call). */
export const randomBytes = (size: number): Uint8Array<ArrayBuffer> => {
  const out = new Uint8Array(size)
  for (let offset = 0; offset < size; offset += 65536) {
    crypto.getRandomValues(out.subarray(offset, Math.min(size, offset + 65536)))
  }
  return out
}

/** One request to an absolute URL; JSON bodies are parsed, others kept as bytes. */
export const send = async (url: string, init: RequestInit = {}): Promise<RawReply> => {
  const res = await fetch(url, init)
  const bytes = new Uint8Array(await res.arrayBuffer())
  const json = bytes.length > 0 && (res.headers.get("content-type") ?? "").includes("application/json")
  return { status: res.status, headers: res.headers, body: json ? JSON.parse(new TextDecoder().decode(bytes)) : bytes }
}

/** The bytes of a `send` answer that was not JSON; fails the test when it was. */
export const bytesOf = (reply: RawReply): Buffer => {
  if (!(reply.body instanceof Uint8Array)) throw new Error(`expected bytes, got ${JSON.stringify(reply.body)}`)
  return Buffer.from(reply.body)
}

/** A URL with one query parameter replaced (or removed when `value` is undefined). */
export const withParam = (url: string, name: string, value: string | undefined): string => {
  const u = new URL(url)
  if (value === undefined) u.searchParams.delete(name)
  else u.searchParams.set(name, value)
  return u.toString()
}
