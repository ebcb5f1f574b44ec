import { SqlClient } from "@effect/sql"
import * as PgClient from "@effect/sql-pg/PgClient"
import { Effect, Redacted } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { migrations } from "../../src/migrations/index.ts"
import { backend, createDatabase } from "../support/database.ts"
import { pgliteLayer } from "../support/pglite.ts"

/**
 * Migration 0009 fills the new asset columns of rows written before it from
 * their task's result items: kind, URL, url_auth, the expiry a signed URL
 * carries, and a creation sequence that follows created_at then id.
 */

let db: Awaited<ReturnType<typeof createDatabase>>
beforeAll(async () => {
  db = await createDatabase()
})
afterAll(() => db?.drop())

/** Applies the chosen migrations in one transaction, as the runner does, after `prelude`. */
const apply = (sql: SqlClient.SqlClient, which: (id: number) => boolean, prelude: ReadonlyArray<string> = []) =>
  sql.withTransaction(Effect.forEach(
    [...prelude, ...migrations.filter(([id]) => which(id)).flatMap(([, , statements]) => statements)],
    (s) => sql.unsafe(s),
    { discard: true }
  ))

const BASE = "http://gw.example"
const S3_DATE = "20270115T080000Z"

describe(`migration 0009 on existing assets (${backend})`, () => {
  it("fills kind, url, url_auth, expires_at and seq from the tasks", async () => {
    const program = Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* apply(sql, (id) => id < 9)
      yield* sql`INSERT INTO accounts (id, name, group_name, created_at, updated_at) VALUES ('acct_1', 'a', 'default', 1, 1)`
      const task = (id: string, kind: string, result: unknown) =>
        sql`INSERT INTO tasks (id, account_id, kind, model, operation, status, request, result, created_at, updated_at)
          VALUES (${id}, 'acct_1', ${kind}, 'm', 'generation', 'succeeded', '{}'::jsonb, ${
          JSON.stringify(result)
        }::jsonb, 1, 1)`
      yield* task("task_v", "video", {
        videos: [
          {
            asset_id: "asset_local",
            url: `${BASE}/storage/results~task_v~a.mp4?X-Expires=1800086400&X-Signature=x`,
            url_auth: "none"
          },
          { asset_id: "asset_key", url: `${BASE}/v1/assets/asset_key/content`, url_auth: "resource_api_key" }
        ]
      })
      yield* task("task_i", "image", {
        images: [
          {
            asset_id: "asset_s3",
            url: `http://s3.example/b/results/task_i/c.png?X-Amz-Date=${S3_DATE}&X-Amz-Expires=3600&X-Amz-Signature=y`
          },
          { asset_id: "asset_img_key", url: `${BASE}/v1/assets/asset_img_key/content` }
        ]
      })
      const asset = (id: string, taskId: string, createdAt: number) =>
        sql`INSERT INTO assets (id, account_id, task_id, storage_key, mime_type, filename, size_bytes, created_at)
          VALUES (${id}, 'acct_1', ${taskId}, ${`results/${taskId}/${id}`}, 'x/y', ${id}, 1, ${createdAt})`
      // Inserted out of creation order: seq must follow created_at, then id.
      yield* asset("asset_s3", "task_i", 30)
      yield* asset("asset_local", "task_v", 10)
      yield* asset("asset_key", "task_v", 20)
      yield* asset("asset_img_key", "task_i", 20)
      // A server whose zone is not UTC must still read S3's UTC dates right.
      yield* apply(sql, (id) => id === 9, ["SET LOCAL TimeZone = 'Asia/Tokyo'"])
      // A plain client: bigint columns are cast so both backends answer numbers.
      const rows = yield* sql<
        { id: string; seq: number; kind: string; url: string; url_auth: string; expires_at: number | null }
      >`
        SELECT id, seq::float8 AS seq, kind, url, url_auth, expires_at::float8 AS expires_at FROM assets ORDER BY seq`
      // A new row gets the next number without naming it.
      yield* sql`INSERT INTO assets (id, account_id, task_id, kind, storage_key, mime_type, filename, size_bytes, url, url_auth, created_at)
        VALUES ('asset_new', 'acct_1', 'task_v', 'video', 'k', 'x/y', 'f', 1, 'u', 'none', 5)`
      const [fresh] = yield* sql<{ seq: number }>`SELECT seq::float8 AS seq FROM assets WHERE id = 'asset_new'`
      return { rows, fresh: fresh! }
    })
    const layer = db.url ? PgClient.layer({ url: Redacted.make(db.url) }) : pgliteLayer()
    const { rows, fresh } = await Effect.runPromise(Effect.provide(program, layer))

    expect(rows.map((r) => r.id)).toEqual(["asset_local", "asset_img_key", "asset_key", "asset_s3"])
    expect(rows.map((r) => r.seq)).toEqual([1, 2, 3, 4])
    expect(fresh.seq).toBe(5)
    const byId = Object.fromEntries(rows.map((r) => [r.id, r]))
    expect(byId.asset_local).toMatchObject({ kind: "video", url_auth: "none", expires_at: 1_800_086_400 })
    expect(byId.asset_local!.url).toContain("X-Expires=1800086400")
    expect(byId.asset_key).toMatchObject({ kind: "video", url_auth: "resource_api_key", expires_at: null })
    expect(byId.asset_s3).toMatchObject({
      kind: "image",
      url_auth: "none",
      expires_at: Date.UTC(2027, 0, 15, 8) / 1000 + 3600
    })
    expect(byId.asset_img_key).toMatchObject({
      kind: "image",
      url_auth: "resource_api_key",
      url: `${BASE}/v1/assets/asset_img_key/content`,
      expires_at: null
    })
  })
})
