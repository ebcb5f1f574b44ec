import { Either } from "effect"
import type { OptionField } from "./contract/Capabilities.ts"
import {
  InvalidRequest,
  type InvalidRequestCode,
  UnsupportedModel,
  type UnsupportedModelCode,
  type ValidationError
} from "./Errors.ts"

/**
 * The building blocks of the request validators derived from capability
 * tables. A check throws `Invalid` with the spec's error; `runChecks` turns
 * the first one into a value, so a validator reads as a list of rules.
 */

class Invalid {
  constructor(readonly error: ValidationError) {}
}

const isUnsupportedModel = (code: string): code is UnsupportedModelCode =>
  code === "unsupported_video_model" || code === "unsupported_image_model"

export const fail = (code: InvalidRequestCode | UnsupportedModelCode, message: string): never => {
  throw new Invalid(
    isUnsupportedModel(code) ? new UnsupportedModel({ code, message }) : new InvalidRequest({ code, message })
  )
}
export const invalid = (message: string): never => fail("invalid_request", message)

export const runChecks = <A>(validate: () => A): Either.Either<A, ValidationError> => {
  try {
    return Either.right(validate())
  } catch (e) {
    if (e instanceof Invalid) return Either.left(e.error)
    throw e
  }
}

/** Own keys only: a request key such as "constructor" or "__proto__" must not reach the prototype. */
export const own = <T>(record: Readonly<Record<string, T>>, key: string): T | undefined =>
  Object.hasOwn(record, key) ? record[key] : undefined

export const isObject = (u: unknown): u is Record<string, unknown> =>
  typeof u === "object" && u !== null && !Array.isArray(u)

export const checkFields = (where: string, value: Record<string, unknown>, allowed: ReadonlySet<string>) => {
  for (const key of Object.keys(value)) {
    if (!allowed.has(key)) invalid(`Unknown field "${where}${key}".`)
  }
}

export const isHttpUrl = (raw: string) => {
  try {
    const url = new URL(raw)
    return (url.protocol === "http:" || url.protocol === "https:") && url.hostname.length > 0
  } catch {
    return false
  }
}

const validOption = (field: OptionField, v: unknown) => {
  const ok = field.type === "string"
    ? typeof v === "string"
    : field.type === "boolean"
    ? typeof v === "boolean"
    : field.type === "integer"
    ? Number.isInteger(v)
    : typeof v === "number" && Number.isFinite(v)
  return ok && (field.enum === undefined || field.enum.includes(v as string | number)) &&
    (field.min === undefined || (v as number) >= field.min) &&
    (field.max === undefined || (v as number) <= field.max)
}

/** One `provider_options` namespace against what the model declares: known namespace, known fields, valid values. */
export const checkDeclaredOptions = (
  modelId: string,
  declaredByModel: Readonly<Record<string, Readonly<Record<string, OptionField>>>>,
  namespace: string,
  options: Record<string, unknown>
) => {
  const declared = own(declaredByModel, namespace)
  if (declared === undefined) {
    const known = Object.keys(declaredByModel)
    return fail(
      "invalid_provider_options",
      `Unknown provider_options namespace "${namespace}" for ${modelId}${
        known.length ? `; accepted: ${known.join(", ")}` : "; this model accepts none"
      }.`
    )
  }
  for (const [key, v] of Object.entries(options)) {
    const field = own(declared, key)
    if (field === undefined) fail("invalid_provider_options", `Unknown field "provider_options.${namespace}.${key}".`)
    if (!validOption(field!, v)) {
      fail("invalid_provider_options", `"provider_options.${namespace}.${key}" must be a valid ${field!.type}.`)
    }
  }
}
