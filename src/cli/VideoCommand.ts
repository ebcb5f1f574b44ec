import { Command, Options } from "@effect/cli"
import { Effect, Option } from "effect"
import { isUrl } from "../client/LocalFiles.ts"
import { createVideoTask, quoteVideoTask, type VideoTaskRequest } from "../client/Tasks.ts"
import { common, jsonObject, withGateway } from "./Common.ts"
import { printQuote } from "./QuoteFlow.ts"
import { finishCreate } from "./TaskFlow.ts"
import { placeReferences, uploadReferences } from "./VideoReferences.ts"

/** The create's headers from the shared options: Idempotency-Key and Cancel-After. */
export const createHeaders = (o: {
  readonly idempotencyKey: Option.Option<string>
  readonly cancelAfter: Option.Option<string>
}) => ({ idempotencyKey: Option.getOrUndefined(o.idempotencyKey), cancelAfter: Option.getOrUndefined(o.cancelAfter) })

/** A flag taking a local file or an http(s) URL, as often as wanted. */
const reference = (name: string, description: string) =>
  Options.text(name).pipe(Options.withPseudoName("FILE|URL"), Options.repeated, Options.withDescription(description))

/** Options shared by the create commands: waiting, downloading and what a script sends along. */
export const createOptions = {
  idempotencyKey: Options.text("idempotency-key").pipe(
    Options.withPseudoName("KEY"),
    Options.optional,
    Options.withDescription("Sent as Idempotency-Key: the same request again with the same key returns the same task.")
  ),
  cancelAfter: Options.text("cancel-after").pipe(
    Options.withPseudoName("DURATION"),
    Options.optional,
    Options.withDescription(
      "Sent as Cancel-After: cancel (and refund) the task if it has not ended by then; 45s, 10m, 2h or seconds, 10 s to 48 h."
    )
  ),
  clientReferenceId: Options.text("client-reference-id").pipe(
    Options.withPseudoName("ID"),
    Options.optional,
    Options.withDescription("Your own reference for the task, echoed back (client_reference_id).")
  ),
  metadata: Options.text("metadata").pipe(
    Options.withPseudoName("JSON"),
    Options.optional,
    Options.withDescription("A JSON object kept with the task and echoed in queries and webhooks.")
  ),
  providerOptions: Options.text("provider-options").pipe(
    Options.withPseudoName("JSON"),
    Options.optional,
    Options.withDescription(
      `provider_options as a JSON object, e.g. '{"sandbox":{"outcome":"fail","delay_ms":3000}}'.`
    )
  ),
  wait: Options.boolean("wait").pipe(
    Options.withDescription("Wait for the task to end, showing its progress, and print the outcome.")
  ),
  out: Options.directory("out").pipe(
    Options.optional,
    Options.withDescription("Download the results into this directory (implies --wait).")
  ),
  timeout: Options.integer("timeout").pipe(
    Options.withPseudoName("SECONDS"),
    Options.optional,
    Options.withDescription("Stop waiting after this many seconds (exit 3); the task itself goes on.")
  ),
  quote: Options.boolean("quote").pipe(
    Options.withDescription(
      "Print what the task would cost and whether the balances cover it, instead of creating it (nothing is charged)."
    )
  )
}

const create = Command.make("create", {
  ...common,
  model: Options.text("model").pipe(
    Options.withPseudoName("ID"),
    Options.withDescription("Video model ID (`mtg models --type video` lists them).")
  ),
  prompt: Options.text("prompt").pipe(
    Options.withPseudoName("TEXT"),
    Options.withDescription("What to generate; refer to reference media as @name.")
  ),
  duration: Options.integer("duration").pipe(
    Options.withPseudoName("SECONDS"),
    Options.withDescription("Length of the video; the model sets the bounds.")
  ),
  aspectRatio: Options.text("aspect-ratio").pipe(
    Options.withPseudoName("W:H"),
    Options.optional,
    Options.withDescription("e.g. 16:9 (the usual default), 9:16, 1:1.")
  ),
  image: reference(
    "image",
    "Reference image. In frame mode (or with no mode) the first is the first frame and a second one the last."
  ),
  lastFrame: Options.text("last-frame").pipe(
    Options.withPseudoName("FILE|URL"),
    Options.optional,
    Options.withDescription("Last frame (frame mode), with exactly one --image as the first.")
  ),
  video: reference("video", "Reference video (media mode)."),
  audio: reference("audio", "Reference audio (media mode)."),
  mode: Options.choice("mode", ["frame", "images", "media"]).pipe(
    Options.optional,
    Options.withDescription(
      "input.reference_mode. media when --video or --audio is given, otherwise the model's default."
    )
  ),
  noAudio: Options.boolean("no-audio").pipe(Options.withDescription("A silent video (output.generate_audio false).")),
  ...createOptions
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
  const follows = (!o.quote && (o.wait || Option.isSome(o.out))) || local
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
    if (o.quote) return yield* printQuote(o, yield* quoteVideoTask(request))
    const reply = yield* createVideoTask(request, createHeaders(o))
    yield* finishCreate(o, "video", reply, o)
  }).pipe(withGateway(o, follows ? ["model", "resource"] : ["model"]))
}).pipe(
  Command.withDescription(
    "Create a video task. Local reference files are uploaded first (and checked to be of their flag's kind); URLs are passed on as they are."
  )
)

export const video = Command.make("video").pipe(
  Command.withDescription("Video tasks."),
  Command.withSubcommands([create])
)
