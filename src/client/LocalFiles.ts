import { FileSystem, Path } from "@effect/platform"
import { Effect, Option } from "effect"
import { fileTypeFromBuffer } from "file-type"
import { inspectable, INSPECTABLE_TYPES, normalizeMimeType, type UploadKind } from "../media/MediaTypes.ts"
import { LocalFileError } from "./Errors.ts"

/** A local file ready to be declared to the gateway. */
export interface LocalFile {
  readonly path: string
  readonly filename: string
  readonly size: number
  readonly mimeType: string
  readonly kind: UploadKind
}

/** Enough bytes for every signature `file-type` knows. */
const HEAD_BYTES = 4100

const byExtension = (filename: string): string | undefined => {
  const extension = filename.toLowerCase().split(".").pop()
  const alias = extension === "jpeg" ? "jpg" : extension
  return Object.entries(INSPECTABLE_TYPES).find(([, t]) => t.extension === alias)?.[0]
}

/**
 * What a local file is, from its bytes first (the gateway inspects them and
 * refuses a type other than the declared one), from its extension when the
 * bytes tell nothing. Only the types the gateway inspects are accepted.
 */
export const describeFile = (filePath: string) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const path = yield* Path.Path
    const fail = (message: string) => Effect.fail(new LocalFileError({ path: filePath, message }))
    const info = yield* Effect.catchAll(fs.stat(filePath), () => fail("no such file, or it cannot be read"))
    if (info.type !== "File") return yield* fail("not a regular file")
    const size = Number(info.size)
    if (size === 0) return yield* fail("the file is empty")
    const head = yield* Effect.scoped(Effect.flatMap(fs.open(filePath), (file) => file.readAlloc(HEAD_BYTES))).pipe(
      Effect.catchAll(() => fail("the file cannot be read"))
    )
    const sniffed = yield* Effect.tryPromise(() => fileTypeFromBuffer(Option.getOrElse(head, () => new Uint8Array())))
      .pipe(
        Effect.orElseSucceed(() => undefined)
      )
    const filename = path.basename(filePath)
    const mimeType = sniffed === undefined ? byExtension(filename) : normalizeMimeType(sniffed.mime)
    const type = mimeType === undefined ? undefined : inspectable(mimeType)
    if (mimeType === undefined || type === undefined) {
      return yield* fail(`not a type the gateway takes (${Object.keys(INSPECTABLE_TYPES).join(", ")})`)
    }
    return { path: filePath, filename, size, mimeType, kind: type.kind } satisfies LocalFile
  })

/** `http(s)://…` is a URL the gateway fetches; anything else names a local file. */
export const isUrl = (value: string) => /^https?:\/\//i.test(value)
