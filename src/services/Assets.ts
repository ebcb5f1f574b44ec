import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer, Option } from "effect"

export interface Asset {
  readonly id: string
  readonly accountId: string
  readonly taskId: string
  readonly storageKey: string
  readonly mimeType: string
  readonly filename: string
  readonly sizeBytes: number
}

/** Result files of tasks, each owned by the account of its task. */
export class Assets extends Context.Tag("Assets")<Assets, {
  /** The asset if it belongs to this account; another account's asset is as absent as an unknown one. */
  readonly find: (accountId: string, id: string) => Effect.Effect<Option.Option<Asset>>
}>() {
  static readonly layer = Layer.effect(
    Assets,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      return {
        find: (accountId, id) =>
          sql<{ id: string; account_id: string; task_id: string; storage_key: string; mime_type: string; filename: string; size_bytes: number }>`
            SELECT id, account_id, task_id, storage_key, mime_type, filename, size_bytes FROM assets
            WHERE id = ${id} AND account_id = ${accountId}`.pipe(
            Effect.map((rows) =>
              Option.map(Option.fromNullable(rows[0]), (r) => ({
                id: r.id,
                accountId: r.account_id,
                taskId: r.task_id,
                storageKey: r.storage_key,
                mimeType: r.mime_type,
                filename: r.filename,
                sizeBytes: r.size_bytes
              }))
            ),
            Effect.orDie,
            Effect.withSpan("Assets.find", { attributes: { "asset.id": id } })
          )
      }
    })
  )
}
