import { mkdtempSync, rmSync } from "node:fs"
import { createRequire } from "node:module"
import { tmpdir } from "node:os"
import { join } from "node:path"

/**
 * An S3-compatible server in this process (`@20minutes/s3rver`, which checks
 * SigV4 signatures, expiry included) on a free loopback port, with one empty
 * bucket. Its only credentials are `S3RVER` / `S3RVER`. It answers unsigned
 * requests too (it has no bucket policies), so tests here can prove refusal
 * of bad signatures, not of none.
 */
export const startS3rver = async (bucket: string) => {
  const S3rver = createRequire(import.meta.url)("@20minutes/s3rver")
  const directory = mkdtempSync(join(tmpdir(), "gw-s3rver-"))
  const server = new S3rver({
    address: "127.0.0.1",
    port: 0,
    silent: true,
    directory,
    configureBuckets: [{ name: bucket }]
  })
  const { port } = await server.run() as { port: number }
  const endpoint = `http://127.0.0.1:${port}`
  // The AWS SDK is loaded by the first test that asks the bucket itself, not by every file that starts s3rver.
  let client: import("@aws-sdk/client-s3").S3Client | undefined
  return {
    /** The bucket's own answer for an object: 200 or 404. */
    headStatus: async (key: string): Promise<number | undefined> => {
      const { HeadObjectCommand, S3Client } = await import("@aws-sdk/client-s3")
      client ??= new S3Client({
        endpoint,
        region: "us-east-1",
        forcePathStyle: true,
        credentials: { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" }
      })
      return client.send(new HeadObjectCommand({ Bucket: bucket, Key: key })).then(
        (r) => r.$metadata.httpStatusCode,
        (e) => e.$metadata?.httpStatusCode ?? Promise.reject(e)
      )
    },
    endpoint,
    env: {
      S3_ENDPOINT: endpoint,
      S3_BUCKET: bucket,
      S3_REGION: "us-east-1",
      S3_ACCESS_KEY_ID: "S3RVER",
      S3_SECRET_ACCESS_KEY: "S3RVER"
    },
    close: async () => {
      client?.destroy()
      await server.close()
      rmSync(directory, { recursive: true, force: true })
    }
  }
}
