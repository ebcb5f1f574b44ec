import { JSONSchema, type Schema } from "effect"

/**
 * Request bodies are read and checked by the handlers (so every failure has
 * the spec's error body), so HttpApi does not know them; this puts their
 * schema into the endpoint's OpenAPI operation instead.
 */
export const jsonBody = <A, I>(schema: Schema.Schema<A, I>) => ({
  requestBody: {
    required: true,
    content: { "application/json": { schema: JSONSchema.make(schema) } }
  }
})

/**
 * The same for a `multipart/form-data` body: the text fields' schema, plus
 * binary file fields (`name` → description; a name ending in `[]` is a list).
 */
export const multipartBody = <A, I>(fields: Schema.Schema<A, I>, files: Readonly<Record<string, string>>) => {
  const text = JSONSchema.make(fields) as { readonly properties?: object; readonly required?: ReadonlyArray<string> }
  const binary = { type: "string", format: "binary" }
  const fileProperties = Object.fromEntries(
    Object.entries(files).map(([name, description]) => [
      name,
      name.endsWith("[]") ? { type: "array", items: binary, description } : { ...binary, description }
    ])
  )
  return {
    requestBody: {
      required: true,
      content: {
        "multipart/form-data": {
          schema: {
            type: "object",
            required: text.required ?? [],
            properties: { ...text.properties, ...fileProperties }
          }
        }
      }
    }
  }
}
