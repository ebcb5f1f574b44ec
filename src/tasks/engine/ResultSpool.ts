import { FileSystem, Path } from "@effect/platform"
import { Context, Data, Effect, Layer, Schema } from "effect"
import { AppConfig } from "../../platform/AppConfig.ts"
import { randomBase62 } from "../../platform/Ids.ts"
import type { DownloadedOutput, Output } from "./Plans.ts"

/**
 * One spooled output: its file in the task's spool folder and what the
 * inspection said of it, so it is stored later exactly as it would have been
 * at once. `asset_id` is chosen when it is spooled, so every later try writes
 * the same object key (a try cut short leaves no second copy behind).
 */
export const SpooledOutput = Schema.Struct({
  file: Schema.String,
  asset_id: Schema.String,
  mime_type: Schema.String,
  extension: Schema.String,
  format: Schema.optional(Schema.String),
  width: Schema.optional(Schema.Number),
  height: Schema.optional(Schema.Number),
  duration_ms: Schema.optional(Schema.Number),
  size_bytes: Schema.Number
})
/** The `spool` column of a `storing` task. */
export const SpoolRecord = Schema.Struct({ outputs: Schema.Array(SpooledOutput) })
export type SpoolRecord = typeof SpoolRecord.Type

/** The spool could not keep the outputs: it would pass `spool_max_bytes`, or its disk failed. */
export class SpoolRefused extends Data.TaggedError("SpoolRefused")<{ readonly message: string }> {}

/**
 * Where a result that exists only in this service waits while object
 * storage is away (docs/engine.md): `DATA_DIR/spool/<task id>/`, a file per
 * output. Results an upstream still holds are not spooled: they wait there
 * (PollTask.ts). The spool is bounded by `storage.spool_max_bytes`. It has
 * an id of its own (`DATA_DIR/spool/id`), recorded with each spooled task,
 * so only processes that see these files (those sharing the DATA_DIR) try
 * to store them; a restart finds them again.
 */
const make = Effect.gen(function*() {
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const { dataDir, limits } = yield* AppConfig
  const root = path.resolve(dataDir, "spool")
  const idFile = path.join(root, "id")
  yield* fs.makeDirectory(root, { recursive: true }).pipe(Effect.orDie)
  // The first process to start makes the id; `wx` keeps a second from replacing it.
  yield* fs.writeFileString(idFile, randomBase62(), { flag: "wx" }).pipe(
    Effect.catchIf((e) => e._tag === "SystemError" && e.reason === "AlreadyExists", () => Effect.void),
    Effect.orDie
  )
  const id = (yield* fs.readFileString(idFile).pipe(Effect.orDie)).trim()
  const folderOf = (taskId: string) => path.join(root, taskId)
  // One keep at a time, so two cannot both pass the bound on the same free room.
  const lock = yield* Effect.makeSemaphore(1)

  /** Bytes the spool holds now: every file in every task folder. */
  const usage = Effect.gen(function*() {
    let total = 0
    for (const name of yield* fs.readDirectory(root)) {
      const folder = path.join(root, name)
      if ((yield* fs.stat(folder)).type !== "Directory") continue
      for (const file of yield* fs.readDirectory(folder)) {
        total += Number((yield* fs.stat(path.join(folder, file))).size)
      }
    }
    return total
  })

  /**
   * Writes the outputs into the task's folder (each through a temporary
   * name, so a crash leaves no file that looks whole) and returns the record
   * to keep with the task. The asset ids are the ones the store will use.
   */
  const keep = (taskId: string, outputs: ReadonlyArray<Output>, assetIds: ReadonlyArray<string>) =>
    lock.withPermits(1)(Effect.gen(function*() {
      const incoming = outputs.reduce((sum, o) => sum + (o._tag === "Downloaded" ? o.sizeBytes : o.bytes.length), 0)
      const held = yield* usage
      if (held + incoming > limits.storage.spool_max_bytes) {
        return yield* new SpoolRefused({
          message:
            `the spool holds ${held} bytes; ${incoming} more would pass storage.spool_max_bytes (${limits.storage.spool_max_bytes})`
        })
      }
      const folder = folderOf(taskId)
      yield* fs.makeDirectory(folder, { recursive: true })
      const spooled = yield* Effect.forEach(outputs, (output, index) =>
        Effect.gen(function*() {
          const file = `${index}.${output.extension}`
          const temp = path.join(folder, `${file}.tmp`)
          if (output._tag === "Downloaded") yield* fs.copyFile(output.path, temp)
          else yield* fs.writeFile(temp, output.bytes)
          yield* fs.rename(temp, path.join(folder, file))
          return {
            file,
            asset_id: assetIds[index]!,
            mime_type: output.mimeType,
            extension: output.extension,
            ...(output.format === undefined ? {} : { format: output.format }),
            ...(output.width === undefined ? {} : { width: output.width }),
            ...(output.height === undefined ? {} : { height: output.height }),
            ...(output.durationMs === undefined ? {} : { duration_ms: output.durationMs }),
            size_bytes: output._tag === "Downloaded" ? output.sizeBytes : output.bytes.length
          }
        }))
      return { outputs: spooled } satisfies SpoolRecord
    })).pipe(
      Effect.catchTag("SystemError", "BadArgument", (e) =>
        // Whatever was written goes: a record is only ever kept of a whole folder.
        Effect.zipRight(
          Effect.ignore(fs.remove(folderOf(taskId), { recursive: true })),
          new SpoolRefused({ message: `the spool could not be written: ${e.message}` })
        ))
    )

  /** The spooled outputs as files to store; fails when they are not here (another host's spool, or removed). */
  const outputsOf = (taskId: string, record: SpoolRecord) =>
    Effect.forEach(record.outputs, (o) =>
      Effect.gen(function*() {
        const file = path.join(folderOf(taskId), o.file)
        const size = Number((yield* fs.stat(file)).size)
        if (size !== o.size_bytes) {
          return yield* new SpoolRefused({ message: `${o.file} holds ${size} bytes, not ${o.size_bytes}` })
        }
        const output: DownloadedOutput = {
          _tag: "Downloaded",
          path: file,
          head: new Uint8Array(0),
          sizeBytes: o.size_bytes,
          mimeType: o.mime_type,
          extension: o.extension,
          format: o.format,
          width: o.width,
          height: o.height,
          durationMs: o.duration_ms
        }
        return output
      }).pipe(
        Effect.catchTag("SystemError", "BadArgument", (e) => new SpoolRefused({ message: e.message }))
      ))

  /** Removes a task's folder; nothing there is fine. */
  const remove = (taskId: string) => Effect.ignore(fs.remove(folderOf(taskId), { recursive: true }))

  /**
   * Removes the folders of tasks not in `waiting` that are older than
   * `minAgeMs`: left by a crash between writing them and recording them. A
   * young folder may be one another process sharing this DATA_DIR is about to record.
   */
  const removeAllBut = (waiting: ReadonlySet<string>, now: number, minAgeMs: number) =>
    Effect.gen(function*() {
      let removed = 0
      for (const name of yield* fs.readDirectory(root)) {
        if (name === "id" || waiting.has(name)) continue
        const info = yield* fs.stat(path.join(root, name))
        const changed = info.mtime._tag === "Some" ? info.mtime.value.getTime() : 0
        if (info.type !== "Directory" || now - changed < minAgeMs) continue
        yield* remove(name)
        removed++
      }
      return removed
    }).pipe(Effect.orElseSucceed(() => 0))

  return { id, keep, outputsOf, remove, removeAllBut } as const
})

export class ResultSpool extends Context.Tag("ResultSpool")<ResultSpool, Effect.Effect.Success<typeof make>>() {
  static readonly layer = Layer.effect(ResultSpool, make)
}
