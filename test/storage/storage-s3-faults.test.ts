import { Effect, Either, Stream } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { configWith } from "../support/config.ts"
import { type FaultMode, type FaultProxy, startFaultProxy } from "../support/faultProxy.ts"
import { startGateway, type TestGateway } from "../support/gateway.ts"
import { startS3rver } from "../support/s3rver.ts"
import { randomBytes, sourceFile, withStorage } from "../support/storage.ts"

/**
 * The S3 backend when the store is away, through the fault proxy: every
 * operation ends within its bound (storage.request_timeout_s, here 2 s,
 * the SDK's own retries included) with a StorageError whose fault is
 * `unavailable`, never a hang, whether connections are refused, reset or
 * black-holed; and it works again as soon as the store is back. Not a
 * database matter: run once.
 */

let s3: Awaited<ReturnType<typeof startS3rver>>
let proxy: FaultProxy
let gw: TestGateway
const data = randomBytes(200_000)

beforeAll(async () => {
  s3 = await startS3rver("gw-s3-faults")
  proxy = await startFaultProxy({ port: Number(new URL(s3.endpoint).port) })
  const config = configWith("limits.json", (limits) => {
    limits.storage = { request_timeout_s: 2 }
  })
  gw = await startGateway({ ...s3.env, S3_ENDPOINT: `http://127.0.0.1:${proxy.port}`, CONFIG_DIR: config })
}, 60_000)
afterAll(async () => {
  await gw?.close()
  await proxy?.close()
  await s3?.close()
})

/** How an operation ended: ok, or its StorageError's fault; anything else (a hang past 30 s, a defect) fails the test. */
const outcome = <A>(effect: Effect.Effect<A, { readonly _tag: "StorageError"; readonly fault: string }>) =>
  effect.pipe(
    Effect.either,
    Effect.map((e) => Either.isRight(e) ? "ok" : e.left.fault),
    Effect.timeoutFail({ duration: "30 seconds", onTimeout: () => new Error("the operation hung") })
  )

let n = 0
const operations = () => {
  const key = `faults/${++n}/clip.mp4`
  const file = sourceFile(gw, data)
  return {
    put: (s: Parameters<Parameters<typeof withStorage>[1]>[0]) => s.put(key, data, "video/mp4"),
    putStream: (s: Parameters<Parameters<typeof withStorage>[1]>[0]) =>
      s.putStream(key, Stream.make(data.subarray(0, 100_000), data.subarray(100_000)), data.length, "video/mp4"),
    putFile: (s: Parameters<Parameters<typeof withStorage>[1]>[0]) => s.putFile(key, file, data.length, "video/mp4"),
    head: (s: Parameters<Parameters<typeof withStorage>[1]>[0]) => s.head(key),
    read: (s: Parameters<Parameters<typeof withStorage>[1]>[0]) =>
      Effect.flatMap(
        s.read(key),
        (content) => content._tag === "Some" ? Stream.runDrain(content.value.body) : Effect.void
      ),
    remove: (s: Parameters<Parameters<typeof withStorage>[1]>[0]) => s.remove(key),
    copy: (s: Parameters<Parameters<typeof withStorage>[1]>[0]) => s.copy(key, `${key}.copy`),
    probe: (s: Parameters<Parameters<typeof withStorage>[1]>[0]) => s.probe
  }
}

describe("S3 storage behind a failing network", { timeout: 120_000 }, () => {
  it.each<FaultMode>(["refuse", "reset", "blackhole"])(
    "%s: every operation fails as unavailable within its bound, none hangs; back, they all work",
    async (mode) => {
      await proxy.set(mode)
      const ops = operations()
      const results = await withStorage(gw, (s) =>
        Effect.all(
          Object.fromEntries(Object.entries(ops).map(([name, op]) => [name, outcome(op(s))])),
          { concurrency: "unbounded" }
        ))
      expect(results).toEqual(Object.fromEntries(Object.keys(ops).map((name) => [name, "unavailable"])))
      expect(await withStorage(gw, (s) => outcome(s.available))).toBe("unavailable")

      await proxy.set("pass")
      const back = operations()
      const sequence = ["put", "head", "read", "copy", "putStream", "putFile", "remove", "probe"] as const
      for (const name of sequence) expect(await withStorage(gw, (s) => outcome(back[name](s))), name).toBe("ok")
    }
  )
})
