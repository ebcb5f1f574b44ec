import { Command, Options } from "@effect/cli"
import { Effect, Option } from "effect"
import { imageEditForm, uploadImages } from "../client/ImageFiles.ts"
import { isUrl } from "../client/LocalFiles.ts"
import { createImageTask, type ImageTaskRequest, quoteImageTask } from "../client/Tasks.ts"
import { type Common, common, jsonObject, withGateway } from "./Common.ts"
import { printQuote } from "./QuoteFlow.ts"
import { finishCreate, type FinishOptions } from "./TaskFlow.ts"
import { createHeaders, createOptions } from "./VideoCommand.ts"

/** The flags of both image commands but the shared ones (`common`, `createOptions`), which come around them. */
const imageFlags = {
  model: Options.text("model").pipe(
    Options.withPseudoName("ID"),
    Options.withDescription("Image model ID (`mtg models --type image` lists them).")
  ),
  prompt: Options.text("prompt").pipe(
    Options.withPseudoName("TEXT"),
    Options.withDescription("What to draw, or how to change the images.")
  ),
  count: Options.integer("count").pipe(
    Options.optional,
    Options.withDescription("How many images (output.count), within the model's bounds.")
  ),
  size: Options.text("size").pipe(
    Options.withPseudoName("WxH"),
    Options.optional,
    Options.withDescription("Width x height in pixels, e.g. 1024x1024, as the model allows.")
  ),
  quality: Options.text("quality").pipe(
    Options.withPseudoName("LEVEL"),
    Options.optional,
    Options.withDescription("A quality level the model offers (`mtg models --json` lists them).")
  ),
  format: Options.text("format").pipe(
    Options.withPseudoName("png|jpeg|webp"),
    Options.optional,
    Options.withDescription("File format of the results, as the model allows.")
  )
}

type ImageOptions =
  & Common
  & {
    readonly [
      K in "idempotencyKey" | "clientReferenceId" | "metadata" | "providerOptions" | "size" | "quality" | "format"
    ]: Option.Option<string>
  }
  & { readonly model: string; readonly prompt: string; readonly count: Option.Option<number> }

/** The JSON form's body from the flags; `input` holds the edit's image URLs. */
const jsonRequest = (o: ImageOptions, operation: "generation" | "edit", input: Partial<ImageTaskRequest["input"]>) =>
  Effect.gen(function*() {
    const metadata = yield* jsonObject("metadata", o.metadata)
    const providerOptions = yield* jsonObject("provider-options", o.providerOptions)
    const output = {
      ...(Option.isSome(o.count) ? { count: o.count.value } : {}),
      ...(Option.isSome(o.size) ? { size: o.size.value } : {}),
      ...(Option.isSome(o.quality) ? { quality: o.quality.value } : {}),
      ...(Option.isSome(o.format) ? { format: o.format.value } : {})
    }
    return {
      model: o.model,
      operation,
      input: { prompt: o.prompt, ...input },
      ...(Object.keys(output).length > 0 ? { output } : {}),
      ...(Option.isSome(o.clientReferenceId) ? { client_reference_id: o.clientReferenceId.value } : {}),
      ...(metadata === undefined ? {} : { metadata }),
      ...(providerOptions === undefined ? {} : { provider_options: providerOptions })
    } satisfies ImageTaskRequest
  })

const follows = (o: { readonly wait: boolean; readonly out: Option.Option<string>; readonly quote: boolean }) =>
  !o.quote && (o.wait || Option.isSome(o.out))

/** Creates the task and follows it as asked, or with `--quote` prints what it would cost instead. */
const createOrQuote = (
  o: Common & FinishOptions & Parameters<typeof createHeaders>[0] & { readonly quote: boolean },
  request: ImageTaskRequest | FormData
) =>
  o.quote
    ? Effect.flatMap(quoteImageTask(request), (quote) => printQuote(o, quote))
    : Effect.flatMap(
      createImageTask(request, createHeaders(o)),
      (reply) => finishCreate(o, "image", reply, o)
    )

const create = Command.make("create", { ...common, ...imageFlags, ...createOptions }, (o) =>
  Effect.gen(function*() {
    yield* createOrQuote(o, yield* jsonRequest(o, "generation", {}))
  }).pipe(withGateway(o, follows(o) ? ["model", "resource"] : ["model"]))).pipe(
    Command.withDescription("Create an image generation task.")
  )

const edit = Command.make("edit", {
  ...common,
  ...imageFlags,
  image: Options.text("image").pipe(
    Options.withPseudoName("FILE|URL"),
    Options.atLeast(1),
    Options.withDescription("Image to edit, a local file or an http(s) URL; at least one.")
  ),
  mask: Options.text("mask").pipe(
    Options.withPseudoName("FILE|URL"),
    Options.optional,
    Options.withDescription("Mask, transparent where the image may change; a local file or an http(s) URL.")
  ),
  ...createOptions
}, (o) => {
  const mask = Option.getOrUndefined(o.mask)
  const all = [...o.image, ...(mask === undefined ? [] : [mask])]
  const local = all.filter((v) => !isUrl(v))
  // Only local files and nothing the form lacks: one multipart request carries the files.
  const asForm = local.length === all.length && Option.isNone(o.count) && Option.isNone(o.clientReferenceId) &&
    Option.isNone(o.metadata) && Option.isNone(o.providerOptions)
  return Effect.gen(function*() {
    if (asForm) {
      const form = yield* imageEditForm(
        {
          model: o.model,
          prompt: o.prompt,
          size: Option.getOrUndefined(o.size),
          quality: Option.getOrUndefined(o.quality),
          output_format: Option.getOrUndefined(o.format)
        },
        o.image,
        mask
      )
      return yield* createOrQuote(o, form)
    }
    // Otherwise the local files go through the image pre-upload and the JSON form names their URLs.
    const stored = local.length === 0
      ? { images: [], mask: undefined }
      : yield* uploadImages(o.image.filter((v) => !isUrl(v)), mask !== undefined && !isUrl(mask) ? mask : undefined)
    const uploaded = [...stored.images]
    const images = o.image.map((v) => ({ url: isUrl(v) ? v : uploaded.shift()! }))
    const maskUrl = mask === undefined ? undefined : isUrl(mask) ? mask : stored.mask!
    const request = yield* jsonRequest(o, "edit", {
      images,
      ...(maskUrl === undefined ? {} : { mask: { url: maskUrl } })
    })
    yield* createOrQuote(o, request)
  }).pipe(withGateway(o, follows(o) || (local.length > 0 && !asForm) ? ["model", "resource"] : ["model"]))
}).pipe(
  Command.withDescription(
    "Create an image edit task. When every image (and the mask) is a local file and no JSON-only flag (--count, --client-reference-id, --metadata, --provider-options) is given, one multipart request carries the files; otherwise local files go through the image pre-upload and the request names their URLs."
  )
)

export const image = Command.make("image").pipe(
  Command.withDescription("Image tasks."),
  Command.withSubcommands([create, edit])
)
