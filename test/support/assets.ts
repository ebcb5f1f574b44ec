import { join } from "node:path"
import { expect } from "vitest"
import { IdPrefix, newId } from "../../src/platform/Ids.ts"
import type { TestGateway } from "./gateway.ts"
import { call } from "./http.ts"
import { pollTask, query } from "./tasks.ts"

/** Follows `after` = `last_id` until `has_more` is false, checking the envelope of every page. */
export const walkAssets = async (
  gw: TestGateway,
  key: string,
  filters: Record<string, string> = {},
  limit?: number
) => {
  const seen: Array<any> = []
  let after: string | null = null
  for (let page = 0; page < 500; page++) {
    const params = new URLSearchParams(filters)
    if (limit !== undefined) params.set("limit", String(limit))
    if (after !== null) params.set("after", after)
    const reply = await call(gw, "GET", `/v1/assets?${params}`, { key })
    expect(reply.status).toBe(200)
    expect(reply.body.object).toBe("list")
    expect(reply.body.data.length).toBeLessThanOrEqual(limit ?? 20)
    expect(reply.body.first_id).toBe(reply.body.data[0]?.id ?? null)
    expect(reply.body.last_id).toBe(reply.body.data.at(-1)?.id ?? null)
    seen.push(...reply.body.data)
    if (!reply.body.has_more) return seen
    after = reply.body.last_id
  }
  throw new Error("paging did not end")
}

/** Creates a task with the model token, waits for it and returns the finished task object. */
export const runTask = async (
  gw: TestGateway,
  keys: { model: string; resource: string },
  kind: "video" | "image",
  json: unknown
) => {
  const created = await call(gw, "POST", `/v1/${kind}/tasks`, { key: keys.model, json })
  if (created.status !== 202) throw new Error(`create: ${created.status} ${JSON.stringify(created.body)}`)
  const task = (await pollTask(gw, keys.resource, created.body.id, undefined, { kind })).at(-1)
  expect(task.status).toBe("succeeded")
  return task
}

/** Where the local object store keeps an object's bytes. */
export const localObjectFile = (gw: TestGateway, key: string) => join(gw.dataDir, "objects", ...key.split("/"))

/** The storage key of an asset, read from the gateway's database. */
export const storageKeyOf = async (gw: TestGateway, assetId: string) =>
  (await query<{ storage_key: string }>(gw, (sql) => sql`SELECT storage_key FROM assets WHERE id = ${assetId}`))[0]!
    .storage_key

/** A finished task row written straight to the database, to own inserted assets. */
export const insertTask = async (gw: TestGateway, accountId: string, kind: "video" | "image") => {
  const id = newId(IdPrefix.task)
  await query(
    gw,
    (sql) =>
      sql`INSERT INTO tasks (id, account_id, kind, model, operation, status, progress, request, created_at, updated_at)
      VALUES (${id}, ${accountId}, ${kind}, 'inserted', 'generation', 'succeeded', 100, '{}'::jsonb, 0, 0)`
  )
  return id
}

/**
 * An asset row written straight to the database (one statement, so rows are
 * created in call order), with no bytes behind it: enough for listing,
 * which never reads the bytes.
 */
export const insertAsset = async (
  gw: TestGateway,
  task: { readonly accountId: string; readonly taskId: string; readonly kind: "video" | "image" },
  createdAt: number
) => {
  const id = newId(IdPrefix.asset)
  await query(
    gw,
    (sql) =>
      sql`INSERT INTO assets (id, account_id, task_id, kind, storage_key, mime_type, filename, size_bytes, url, url_auth,
        created_at)
      VALUES (${id}, ${task.accountId}, ${task.taskId}, ${task.kind}, ${`results/${task.taskId}/${id}`},
        'application/octet-stream', ${id}, 1, ${`${gw.url}/v1/assets/${id}/content`}, 'resource_api_key', ${createdAt})`
  )
  return id
}
