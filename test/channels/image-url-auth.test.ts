import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createAccount } from "../support/adminApi.ts"
import { api } from "../support/api.ts"
import { alsoWith, configWith } from "../support/config.ts"
import { backend } from "../support/database.ts"
import { startGateway, type TestGateway } from "../support/gateway.ts"
import { probeBytes } from "../support/media.ts"
import { query } from "../support/tasks.ts"

/**
 * Image result items carry `url_auth` as video items do (docs/api.md, Image
 * tasks): a caller of gateway A, whose `gateway` channel to B is configured
 * with `url_auth: resource_api_key`, reads in the item that its image needs
 * the resource key, and downloads it with it. A stored item from before the
 * field existed gets it from its URL when read.
 */

const IMAGE = "provx-image-1"
const engine = { poll_interval_ms: 200, heartbeat_s: 1, lease_s: 10, retry_base_ms: 50, generate_retries: 2 }
const unthrottle = (limits: any) => {
  limits.engine = engine
  for (const rate of Object.values(limits.rate_limits) as Array<any>) rate.burst = rate.per_second = 10_000
}

let a: TestGateway
let b: TestGateway

beforeAll(async () => {
  const bConfig = configWith("models.json", (models) => {
    models.channels.sandbox.url_auth = "resource_api_key"
  })
  alsoWith(bConfig, "limits.json", unthrottle)
  b = await startGateway({ ROLE: "all", CONFIG_DIR: bConfig })
  const peer = await createAccount(b, { name: "gateway-a", wallet_credits: 1000 })
  const aConfig = configWith("models.json", (models) => {
    models.channels.peer = {
      adapter: "gateway",
      base_url: b.url,
      credentials: { model_token: { env: "PEER_SK" }, resource_key: { env: "PEER_AK" } },
      concurrency: 5,
      url_auth: "resource_api_key"
    }
    models.models[IMAGE].channels = [{ channel: "peer", upstream_model: IMAGE }]
  })
  alsoWith(aConfig, "limits.json", unthrottle)
  a = await startGateway({ ROLE: "all", CONFIG_DIR: aConfig, PEER_SK: peer.model.key, PEER_AK: peer.resource.key })
}, 60_000)
afterAll(async () => {
  await a?.close()
  await b?.close()
})

const body = {
  model: IMAGE,
  operation: "generation",
  input: { prompt: "a key" },
  output: { size: "512x512" }
} as const

describe(`image result items carry url_auth (${backend})`, () => {
  it("a chained gateway's image says it needs the resource key; without it 401, with it the PNG", async () => {
    const acct = await createAccount(a, { name: "images", wallet_credits: 100 })
    const caller = api(a, acct)
    const created = await caller.createImageReply(body)
    expect(created.status).toBe(202)
    const task = (await caller.waitTask("image", created.task.id)).at(-1)!
    expect(task.status).toBe("succeeded")
    const item = task.result!.images[0]!
    expect(item.url_auth).toBe("resource_api_key")
    expect(item.url).toBe(`${a.url}/v1/assets/${item.asset_id}/content`)

    expect((await fetch(item.url)).status).toBe(401)
    const keyed = await fetch(item.url, { headers: { authorization: `Bearer ${acct.resource.key}` } })
    expect(keyed.status).toBe(200)
    const probed = await probeBytes(new Uint8Array(await keyed.arrayBuffer()))
    expect(probed.video).toMatchObject({ codec: "png", width: 512, height: 512 })

    // The list and B's own item say the same.
    const listed = await caller.listImages({ limit: 1 })
    expect(listed.data[0]?.result?.images[0]?.url_auth).toBe("resource_api_key")
    const [bRow] = await query<{ result: any }>(
      b,
      (sql) => sql`SELECT result FROM tasks WHERE idempotency_key = ${task.id}`
    )
    expect(bRow!.result.images[0].url_auth).toBe("resource_api_key")

    // Stored before the field existed: read from the URL's form.
    await query(
      a,
      (sql) =>
        sql`UPDATE tasks SET result = ${JSON.stringify({ images: [{ ...item, url_auth: undefined }] })}::jsonb
          WHERE id = ${task.id} RETURNING id`
    )
    const old = await caller.getImage(task.id)
    expect(old.result?.images[0]?.url_auth).toBe("resource_api_key")
  })
})
