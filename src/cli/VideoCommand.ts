import { Command, Options } from "@effect/cli"
import { Effect, Option } from "effect"
import { isUrl } from "../client/LocalFiles.ts"
import { createVideoTask, type VideoTaskRequest } from "../client/Tasks.ts"
import { common, jsonObject, withGateway } from "./Common.ts"
import { finishCreate } from "./TaskFlow.ts"
import { placeReferences, uploadReferences } from "./VideoReferences.ts"

const reference = (name: string, description: string) =>
  Options.text(name).pipe(Options.repeated, Options.withDescription(description))

/** Options shared by the create commands: waiting, downloading and what a script sends along. */
export const createOptions = {
  idempotencyKey: Options.text("idempotency-key").pipe(
    Options.optional,
    Options.withDescription("Idempotency-Key: sending the same request again with it returns the same task.")
  ),
  clientReferenceId: Options.text("client-reference-id").pipe(
    Options.optional,
    Options.withDescription("Your own reference, echoed.")
  ),
  metadata: Options.text("metadata").pipe(
    Options.optional,
    Options.withDescription("A JSON object echoed in queries and webhooks.")
  ),
  providerOptions: Options.text("provider-options").pipe(
    Options.optional,
    Options.withDescription(`provider_options as JSON, e.g. '{"sandbox":{"outcome":"fail","delay_ms":3000}}'.`)
  ),
  wait: Options.boolean("wait").pipe(
    Options.withDescription("Wait for the task, with progress, and print the outcome.")
  ),
  out: Options.directory("out").pipe(
    Options.optional,
    Options.withDescription("Download the results into this directory (implies --wait).")
  ),
  timeout: Options.integer("timeout").pipe(
    Options.optional,
    Options.withDescription("Seconds to wait at most; the task goes on (exit 3).")
  )
}

const create = Command.make("create", {
  ...common,
  ...createOptions,
  model: Options.text("model").pipe(Options.withDescription("Video model ID (see `mtg models`).")),
  prompt: Options.text("prompt").pipe(Options.withDescription("What to generate; name references as @name.")),
  duration: Options.integer("duration").pipe(Options.withDescription("Seconds (bounds per model).")),
  aspectRatio: Options.text("aspect-ratio").pipe(
    Options.optional,
    Options.withDescription("e.g. 16:9 (default), 9:16, 1:1.")
  ),
  image: reference(
    "image",
    "Reference image, a local file or an http(s) URL; repeatable. In frame mode the first is the first frame."
  ),
  lastFrame: Options.text("last-frame").pipe(
    Options.optional,
    Options.withDescription("Last frame (frame mode), file or URL.")
  ),
  video: reference("video", "Reference video (media mode), file or URL; repeatable."),
  audio: reference("audio", "Reference audio (media mode), file or URL; repeatable."),
  mode: Options.choice("mode", ["frame", "images", "media"]).pipe(
    Options.optional,
    Options.withDescription("input.reference_mode; media when videos or audios are given, else the model's default.")
  ),
  noAudio: Options.boolean("no-audio").pipe(Options.withDescription("A silent video (output.generate_audio false)."))
}, (o) => {
  const flags = {
    images: o.image,
    lastFrame: Option.getOrUndefined(o.lastFrame),
    videos: o.video,
    audios: o.audio,
    mode: Option.getOrUndefined(o.mode)
  }
  // The resource key is needed only to upload files and to follow the task.
  const local = [...flags.images, ...Option.toArray(o.lastFrame), ...flags.videos, ...flags.audios].some((v) =>
    !isUrl(v)
  )
  const follows = o.wait || Option.isSome(o.out) || local
  return Effect.gen(function*() {
    // The flags are checked before any file is uploaded.
    yield* placeReferences(flags, (value) => value)
    const metadata = yield* jsonObject("metadata", o.metadata)
    const providerOptions = yield* jsonObject("provider-options", o.providerOptions)
    const url = yield* uploadReferences(o, flags)
    const request: VideoTaskRequest = {
      model: o.model,
      operation: "generation",
      input: { prompt: o.prompt, ...(yield* placeReferences(flags, url)) },
      output: {
        duration: o.duration,
        ...(Option.isSome(o.aspectRatio) ? { aspect_ratio: o.aspectRatio.value } : {}),
        ...(o.noAudio ? { generate_audio: false } : {})
      },
      ...(Option.isSome(o.clientReferenceId) ? { client_reference_id: o.clientReferenceId.value } : {}),
      ...(metadata === undefined ? {} : { metadata }),
      ...(providerOptions === undefined ? {} : { provider_options: providerOptions })
    }
    const reply = yield* createVideoTask(request, { idempotencyKey: Option.getOrUndefined(o.idempotencyKey) })
    yield* finishCreate(o, "video", reply, o)
  }).pipe(withGateway(o, follows ? ["model", "resource"] : ["model"]))
}).pipe(
  Command.withDescription("Create a video task; local reference files are uploaded first.")
)

export const video = Command.make("video").pipe(
  Command.withDescription("Video tasks."),
  Command.withSubcommands([create])
)
