import { join } from "node:path"
import { expect } from "vitest"
import type { Asset } from "../../src/assets/Asset.ts"
import type { AssetListParams } from "../../src/client/Assets.ts"
import type { ImageTaskRequest, TaskOf, VideoTaskRequest } from "../../src/client/Tasks.ts"
import { IdPrefix, newId } from "../../src/platform/Ids.ts"
import type { TaskKind } from "../../src/tasks/Task.ts"
import { api } from "./api.ts"
import type { TestGateway } from "./gateway.ts"
import { query } from "./tasks.ts"

/** Follows `after` = `last_id` until `has_more` is false, checking the envelope of every page. */
export const walkAssets = async (gw: TestGateway, key: string, filters: AssetListParams = {}, limit?: number) => {
  const { listAssets } = api(gw, { resource: key })
  const seen: Array<Asset> = []
  let after: string | null = null
  for (let page = 0; page < 500; page++) {
    const reply = await listAssets({
      ...filters,
      ...(limit === undefined ? {} : { limit }),
      ...(after === null ? {} : { after })
    })
    expect(reply.object).toBe("list")
    expect(reply.data.length).toBeLessThanOrEqual(limit ?? 20)
    expect(reply.first_id).toBe(reply.data[0]?.id ?? null)
    expect(reply.last_id).toBe(reply.data.at(-1)?.id ?? null)
    seen.push(...reply.data)
    if (!reply.has_more) return seen
    after = reply.last_id
  }
  throw new Error("paging did not end")
}

/** Creates a task with the model token, waits for it and returns the finished task object. */
export const runTask = async <K extends TaskKind>(
  gw: TestGateway,
  keys: { model: string; resource: string },
  kind: K,
  request: K extends "video" ? VideoTaskRequest : ImageTaskRequest
): Promise<TaskOf<K>> => {
  const tasks = api(gw, keys)
  const created = kind === "video"
    ? await tasks.createVideo(request as VideoTaskRequest)
    : await tasks.createImage(request as ImageTaskRequest)
  const task = (await tasks.waitTask(kind, created.id)).at(-1)!
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
