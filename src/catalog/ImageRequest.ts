import type { Either } from "effect"
import type { OptionField } from "./contract/Capabilities.ts"
import type { ImageModelCapability } from "./contract/ImageCapabilities.ts"
import type { ImageSource, ValidImageRequest } from "./contract/Requests.ts"
import type { ValidationError } from "./Errors.ts"
import { checkDeclaredOptions, checkFields, fail, invalid, isHttpUrl, isObject, runChecks } from "./RequestChecks.ts"

/**
 * Validation of `POST /v1/image/tasks` (both forms), derived from the image
 * model's capability table. The spec leaves the image error codes open:
 * `unsupported_image_model`, `unsupported_image_operation` and
 * `invalid_image_parameter` mirror the video ones.
 */

/** What validation needs of a model: its table and the `provider_options` it accepts. */
export interface ImageModelRules {
  readonly capability: ImageModelCapability
  readonly providerOptions: Readonly<Record<string, Readonly<Record<string, OptionField>>>>
}

export const MAX_IMAGE_PROMPT_CHARS = 4000
const MAX_CLIENT_REFERENCE_ID = 191

const TOP_FIELDS = new Set([
  "model",
  "operation",
  "input",
  "output",
  "client_reference_id",
  "metadata",
  "provider_options"
])
const INPUT_FIELDS = new Set(["prompt", "images", "mask"])
const OUTPUT_FIELDS = new Set(["count", "size", "quality", "format"])

const urlSource = (where: string, value: unknown): ImageSource => {
  if (!isObject(value)) return invalid(`"${where}" must be an object with a "url".`)
  checkFields(`${where}.`, value, new Set(["url"]))
  if (typeof value.url !== "string" || !isHttpUrl(value.url)) {
    return invalid(`"${where}.url" must be an absolute HTTP or HTTPS URL.`)
  }
  return { url: value.url }
}

const oneOf = <T extends string>(
  where: string,
  value: unknown,
  allowed: ReadonlyArray<T>,
  fallback: T,
  model: string
): T => {
  if (value === undefined) return fallback
  if (typeof value !== "string" || !allowed.includes(value as T)) {
    return fail("invalid_image_parameter", `"${where}" must be one of ${allowed.join(", ")} for ${model}.`)
  }
  return value as T
}

/** The request with images given as sources; the multipart form passes its stored files here. */
export interface ImageRequestBody {
  readonly body: unknown
  /** Files of a multipart request, already stored; they take the place of `input.images` / `input.mask`. */
  readonly files?: { readonly images: ReadonlyArray<ImageSource>; readonly mask: ImageSource | null }
}

const validate = (
  lookup: (id: string) => ImageModelRules | undefined,
  { body, files }: ImageRequestBody
): ValidImageRequest => {
  if (!isObject(body)) return invalid("The request body must be a JSON object.")
  if (Object.hasOwn(body, "webhook_url")) {
    return invalid(`"webhook_url" is not accepted: webhooks are configured per account, not per task.`)
  }
  checkFields("", body, TOP_FIELDS)
  if (typeof body.model !== "string" || body.model.length === 0) return invalid(`"model" is required.`)
  if (body.operation !== "generation" && body.operation !== "edit") {
    return invalid(`"operation" must be "generation" or "edit".`)
  }
  const rules = lookup(body.model)
  if (rules === undefined) return fail("unsupported_image_model", `Model "${body.model}" is not available.`)
  const model = rules.capability
  if (!model.operations.includes(body.operation)) {
    return fail(
      "unsupported_image_operation",
      `Model "${model.id}" does not support "${body.operation}"; it supports ${model.operations.join(", ")}.`
    )
  }

  const input = body.input
  if (!isObject(input)) return invalid(`"input" is required and must be an object with a "prompt".`)
  checkFields("input.", input, INPUT_FIELDS)
  if (typeof input.prompt !== "string" || input.prompt.trim().length === 0) {
    return invalid(`"input.prompt" is required and must not be empty.`)
  }
  if ([...input.prompt].length > MAX_IMAGE_PROMPT_CHARS) {
    return fail("invalid_image_parameter", `"input.prompt" must be at most ${MAX_IMAGE_PROMPT_CHARS} characters.`)
  }

  let images: ReadonlyArray<ImageSource>
  let mask: ImageSource | null
  if (files !== undefined) {
    images = files.images
    mask = files.mask
  } else {
    if (input.images !== undefined && (!Array.isArray(input.images) || input.images.length === 0)) {
      return invalid(`"input.images" must be a non-empty array of {"url"} objects when present.`)
    }
    images = ((input.images ?? []) as Array<unknown>).map((item, i) => urlSource(`input.images[${i}]`, item))
    mask = input.mask === undefined ? null : urlSource("input.mask", input.mask)
  }
  if (body.operation === "edit" && images.length === 0) {
    return invalid(`"edit" needs at least one image in "input.images".`)
  }
  if (images.length > model.input_images.max) {
    return invalid(`At most ${model.input_images.max} input images are accepted by ${model.id}.`)
  }
  if (mask !== null && (body.operation !== "edit" || !model.mask)) {
    return fail("invalid_image_parameter", `A mask is accepted only for "edit" on a model that supports masks.`)
  }

  const output = body.output ?? {}
  if (!isObject(output)) return invalid(`"output" must be an object.`)
  checkFields("output.", output, OUTPUT_FIELDS)
  const count = output.count ?? 1
  if (typeof count !== "number" || !Number.isInteger(count)) return invalid(`"output.count" must be an integer.`)
  if (count < model.count.min || count > model.count.max) {
    return fail(
      "invalid_image_parameter",
      `"output.count" must be ${model.count.min} to ${model.count.max} for ${model.id}.`
    )
  }
  const size = oneOf("output.size", output.size, model.sizes, model.default_size, model.id)
  const quality = oneOf("output.quality", output.quality, model.qualities, model.default_quality, model.id)
  const format = oneOf("output.format", output.format, model.formats, model.default_format, model.id)

  const ref = body.client_reference_id
  if (ref !== undefined && (typeof ref !== "string" || [...ref].length > MAX_CLIENT_REFERENCE_ID)) {
    return invalid(`"client_reference_id" must be a string of at most ${MAX_CLIENT_REFERENCE_ID} characters.`)
  }
  if (body.metadata !== undefined && !isObject(body.metadata)) return invalid(`"metadata" must be a JSON object.`)

  const providerOptions: Record<string, Record<string, unknown>> = {}
  if (body.provider_options !== undefined) {
    if (!isObject(body.provider_options)) {
      return fail("invalid_provider_options", `"provider_options" must be an object.`)
    }
    for (const [namespace, options] of Object.entries(body.provider_options)) {
      if (!isObject(options)) {
        return fail("invalid_provider_options", `"provider_options.${namespace}" must be an object.`)
      }
      checkDeclaredOptions(model.id, rules.providerOptions, namespace, options)
      providerOptions[namespace] = options
    }
  }

  return {
    model: model.id,
    operation: body.operation,
    prompt: input.prompt,
    images,
    mask,
    count,
    size,
    quality,
    format,
    clientReferenceId: (ref as string | undefined) ?? null,
    metadata: (body.metadata as Record<string, unknown> | undefined) ?? null,
    providerOptions
  }
}

export const validateImageRequest = (
  lookup: (id: string) => ImageModelRules | undefined,
  request: ImageRequestBody
): Either.Either<ValidImageRequest, ValidationError> => runChecks(() => validate(lookup, request))
