// Runs once: no database (left out of the PostgreSQL pass, vitest.config.ts).
import { OpenApi } from "@effect/platform"
import { describe, expect, it } from "vitest"
import { GatewayApi } from "../../src/Api.ts"

/**
 * Each endpoint's OpenAPI responses are the errors it really answers with
 * (the owning features' errors, declared in the contracts), not every status
 * on every endpoint; each error response names its spec code.
 */
const doc = OpenApi.fromApi(GatewayApi) as any
const statuses = (path: string, method: string) => Object.keys(doc.paths[path][method].responses).sort()
const codes = (path: string, method: string, status: string) =>
  JSON.stringify(doc.paths[path][method].responses[status]).match(/"code":\{"type":"string","enum":\[[^\]]*\]/g)
    ?.join() ?? ""

describe("OpenAPI errors per endpoint", () => {
  it("a task read: the key's errors and 404 task_not_found; nothing about money or idempotency", () => {
    const got = statuses("/v1/video/tasks/{task_id}", "get")
    expect(got).toEqual(expect.arrayContaining(["200", "401", "403", "404", "429", "500"]))
    expect(got).not.toContain("402")
    expect(got).not.toContain("409")
    expect(codes("/v1/video/tasks/{task_id}", "get", "404")).toContain("task_not_found")
  })

  it("task creation: 402 insufficient_balance, 409 idempotency_key_conflict and the validation codes", () => {
    expect(statuses("/v1/video/tasks", "post")).toEqual(
      expect.arrayContaining(["202", "400", "402", "409", "413", "429"])
    )
    expect(codes("/v1/video/tasks", "post", "402")).toContain("insufficient_balance")
    expect(codes("/v1/video/tasks", "post", "409")).toContain("idempotency_key_conflict")
    expect(codes("/v1/video/tasks", "post", "400")).toContain("invalid_video_duration")
    expect(codes("/v1/video/tasks", "post", "429")).toContain("rate_limit_exceeded")
  })

  it("task cancel: 404 task_not_found and 409 task_not_cancellable, resource key; creates document Cancel-After", () => {
    for (const kind of ["video", "image"]) {
      const path = `/v1/${kind}/tasks/{task_id}/cancel`
      expect(statuses(path, "post")).toEqual(expect.arrayContaining(["200", "401", "403", "404", "409", "429"]))
      expect(statuses(path, "post")).not.toContain("402")
      expect(codes(path, "post", "404")).toContain("task_not_found")
      expect(codes(path, "post", "409")).toContain("task_not_cancellable")
      const headers = doc.paths[`/v1/${kind}/tasks`].post.parameters.map((p: any) => p.name)
      expect(headers).toEqual(expect.arrayContaining(["Idempotency-Key", "Cancel-After"]))
    }
  })

  it("health has no key errors; the admin API no rate limit; confirmation its upload errors", () => {
    expect(statuses("/healthz", "get")).not.toContain("401")
    expect(statuses("/readyz", "get")).toContain("503")
    expect(statuses("/admin/v1/accounts/{id}", "get")).not.toContain("429")
    expect(codes("/v1/media/uploads/complete", "post", "409")).toContain("upload_not_received")
    expect(codes("/v1/media/uploads/complete", "post", "404")).toContain("upload_not_found")
  })
})
