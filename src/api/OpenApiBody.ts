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
