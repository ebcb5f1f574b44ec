import { Args, Command, Options } from "@effect/cli"
import { Effect, Option } from "effect"
import { deleteAsset, downloadAsset, getAsset, listAssets } from "../client/Assets.ts"
import { listModels } from "../client/Tasks.ts"
import { common, output, withGateway } from "./Common.ts"
import { makeProgress } from "./Progress.ts"
import { uploadWithProgress } from "./UploadFlow.ts"

export const models = Command.make("models", {
  ...common,
  type: Options.choice("type", ["video", "image"]).pipe(
    Options.optional,
    Options.withDescription("Only the video or only the image models.")
  )
}, (o) =>
  Effect.gen(function*() {
    const list = yield* listModels
    const data = list.data.filter((m) => Option.isNone(o.type) || m.type === o.type.value)
    yield* output(o, { ...list, data }, () =>
      data.map((m) =>
        `${m.id.padEnd(32)} ${m.type.padEnd(5)} ${
          m.family.padEnd(6)
        } ${m.pricing.effective_price} credits/${m.pricing.unit}`
      ))
  }).pipe(withGateway(o, Option.isSome(o.modelToken) ? [] : ["resource"]))).pipe(
    Command.withDescription(
      "List the models you can use, with their prices; --json adds their capabilities. Takes either key."
    )
  )

export const upload = Command.make("upload", {
  ...common,
  files: Args.text({ name: "file" }).pipe(
    Args.atLeast(1),
    Args.withDescription("Local files: PNG, JPEG or WebP images, MP4 or MOV videos, MP3 or WAV audio.")
  )
}, (o) =>
  Effect.gen(function*() {
    const uploaded = yield* uploadWithProgress(o, o.files)
    yield* output(o, {
      object: "media.upload.list",
      data: uploaded.map(({ file: _file, ...item }) => item)
    }, () => uploaded.map((u) => `${u.file.path}  ${u.kind} ${u.mime_type} ${u.size_bytes} B  ${u.url}`))
  }).pipe(withGateway(o, ["resource"]))).pipe(
    Command.withDescription(
      "Upload reference media (sessions, the bytes to storage, confirmation) and print the confirmed URLs, which video create takes."
    )
  )

const assetId = Args.text({ name: "asset_id" }).pipe(Args.withDescription("The asset's id (asset_…)."))

const list = Command.make("list", {
  ...common,
  taskId: Options.text("task-id").pipe(
    Options.withPseudoName("ID"),
    Options.optional,
    Options.withDescription("Only the results of this task.")
  ),
  kind: Options.choice("kind", ["video", "image"]).pipe(
    Options.optional,
    Options.withDescription("Only videos or only images.")
  ),
  after: Options.text("after").pipe(
    Options.withPseudoName("ID"),
    Options.optional,
    Options.withDescription("Continue after this asset: the previous page's last id, which it prints as `more:`.")
  ),
  limit: Options.integer("limit").pipe(
    Options.optional,
    Options.withDescription("Page size, 1 to 100 (the gateway's default 20).")
  )
}, (o) =>
  Effect.gen(function*() {
    const page = yield* listAssets({
      ...(Option.isSome(o.taskId) ? { task_id: o.taskId.value } : {}),
      ...(Option.isSome(o.kind) ? { kind: o.kind.value } : {}),
      ...(Option.isSome(o.after) ? { after: o.after.value } : {}),
      ...(Option.isSome(o.limit) ? { limit: o.limit.value } : {})
    })
    yield* output(o, page, () => [
      ...page.data.map((a) => `${a.id}  ${a.kind.padEnd(5)} ${a.mime_type.padEnd(10)} ${a.size_bytes} B  ${a.task_id}`),
      ...(page.has_more ? [`more: --after ${page.last_id}`] : [])
    ])
  }).pipe(withGateway(o, ["resource"]))).pipe(
    Command.withDescription("List your result files, newest first, a page at a time.")
  )

const get = Command.make("get", { ...common, assetId }, (o) =>
  Effect.gen(function*() {
    const asset = yield* getAsset(o.assetId)
    yield* output(o, asset, () => Object.entries(asset).map(([k, v]) => `${k}: ${v}`))
  }).pipe(withGateway(o, ["resource"]))).pipe(
    Command.withDescription("Show an asset: its task, kind, type, size and URL.")
  )

const download = Command.make("download", {
  ...common,
  assetId,
  out: Options.directory("out").pipe(
    Options.withDefault("."),
    Options.withDescription("Directory to write the file into.")
  )
}, (o) =>
  Effect.gen(function*() {
    const progress = yield* makeProgress({ json: o.json, step: 10 })
    const file = yield* downloadAsset(o.assetId, o.out, {
      onProgress: (received, total) =>
        progress.update(total === undefined ? 0 : (received / total) * 100, `downloading ${o.assetId}`)
    }).pipe(Effect.ensuring(Effect.sync(progress.done)))
    yield* output(o, { id: o.assetId, file }, () => [file])
  }).pipe(withGateway(o, ["resource"]))).pipe(Command.withDescription(
    "Download an asset's file through the gateway with the resource key (so an expired signed URL does not matter)."
  ))

const remove = Command.make("delete", { ...common, assetId }, (o) =>
  Effect.gen(function*() {
    const deleted = yield* deleteAsset(o.assetId)
    yield* output(o, deleted, () => [`${deleted.id} deleted`])
  }).pipe(withGateway(o, ["resource"]))).pipe(
    Command.withDescription("Delete an asset's file from storage; the task keeps its result item.")
  )

export const assets = Command.make("assets").pipe(
  Command.withDescription("Your tasks' result files."),
  Command.withSubcommands([list, get, download, remove])
)
