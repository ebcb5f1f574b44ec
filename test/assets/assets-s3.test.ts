import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createAccount } from "../support/adminApi.ts"
import { api } from "../support/api.ts"
import { runTask, storageKeyOf } from "../support/assets.ts"
import { backend } from "../support/database.ts"
import { startGateway, type TestGateway } from "../support/gateway.ts"
import { expectError, raw } from "../support/http.ts"
import { startS3rver } from "../support/s3rver.ts"
import { videoRequest } from "../support/tasks.ts"

/**
 * Deleting an asset whose bytes live in an S3 bucket (`@20minutes/s3rver`):
 * the object leaves the bucket, asked of the bucket itself, and the result's
 * pre-signed URL, which points at the bucket, stops working.
 */

const BUCKET = "gw-assets-bucket"

let s3: Awaited<ReturnType<typeof startS3rver>>
let gw: TestGateway
beforeAll(async () => {
  s3 = await startS3rver(BUCKET)
  gw = await startGateway({ ...s3.env, ROLE: "all" })
})
afterAll(async () => {
  await gw?.close()
  await s3?.close()
})

/** The bucket's own answer for the object: 200 or 404. */
const headStatus = (key: string) => s3.headStatus(key)

describe(`assets on S3 (${backend})`, () => {
  it("DELETE removes the object from the bucket; the pre-signed result URL then answers 404", async () => {
    const acct = await createAccount(gw, { name: "s3-assets", wallet_credits: 100 })
    const task = await runTask(
      gw,
      { model: acct.model.key, resource: acct.resource.key },
      "video",
      videoRequest({ output: { duration: 4, generate_audio: false } })
    )
    const item = task.result!.videos[0]!
    expect(new URL(item.url).origin).toBe(s3.endpoint)

    const assets = api(gw, acct)
    const asset = await assets.getAsset(item.asset_id)
    expect(asset).toMatchObject({ url: item.url, url_auth: "none", temporary: true, kind: "video" })
    expect(asset.expires_at).toBe(
      Date.parse(
            new URL(item.url).searchParams.get("X-Amz-Date")!.replace(
              /(\d{4})(\d\d)(\d\d)T(\d\d)(\d\d)(\d\d)Z/,
              "$1-$2-$3T$4:$5:$6Z"
            )
          ) / 1000 +
        Number(new URL(item.url).searchParams.get("X-Amz-Expires"))
    )
    const key = await storageKeyOf(gw, item.asset_id)
    expect(await headStatus(key)).toBe(200)
    const content = await fetch(`${gw.url}/v1/assets/${item.asset_id}/content`, {
      headers: { authorization: `Bearer ${acct.resource.key}` }
    })
    expect(content.status).toBe(200)
    expect((await content.arrayBuffer()).byteLength).toBe(asset.size_bytes)
    expect((await fetch(item.url)).status).toBe(200)

    const deleted = await assets.deleteAsset(item.asset_id)
    expect(deleted).toEqual({ id: item.asset_id, object: "asset.deleted", deleted: true })

    expect(await headStatus(key)).toBe(404)
    const signed = await fetch(item.url)
    expect(signed.status).toBe(404)
    expect(await signed.text()).toContain("NoSuchKey")
    expectError(
      await raw(gw, "GET", `/v1/assets/${item.asset_id}/content`, { key: acct.resource.key }),
      404,
      "asset_not_found"
    )
    expectError(
      await raw(gw, "GET", `/v1/assets/${item.asset_id}`, { key: acct.resource.key }),
      404,
      "asset_not_found"
    )
  })
})
