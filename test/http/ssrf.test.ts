import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createAccount, operator } from "../support/adminApi.ts"
import { api } from "../support/api.ts"
import { unthrottled } from "../support/config.ts"
import { backend } from "../support/database.ts"
import { startGateway, type TestGateway } from "../support/gateway.ts"
import { errorOf, expectError, raw, rawAdmin, type RawReply } from "../support/http.ts"

/**
 * Every URL field a caller or account owner sets is refused, at once (400,
 * the spec's error body, nothing created or charged), when it reaches a
 * non-public address in any spelling: the webhook URL and every reference
 * URL of video and image tasks. The gateway runs with
 * ALLOW_PRIVATE_TARGETS=false (the harness's default is true). What happens
 * at connect time and on redirects: target-connect.test.ts.
 */

const PUBLIC = "https://media.example.com/ref.png"

/** Address forms that all reach a loopback, private, link-local or otherwise non-public address. */
const FORMS: ReadonlyArray<readonly [string, string]> = [
  ["decimal", "http://2130706433:8080/a.png"],
  ["octal", "http://0177.0.0.1/a.png"],
  ["hex", "http://0x7f.0.0.1/a.png"],
  ["hex, one number", "http://0x7f000001/a.png"],
  ["short", "http://127.1/a.png"],
  ["short private", "http://10.1/a.png"],
  ["IPv4-mapped", "http://[::ffff:127.0.0.1]/a.png"],
  ["IPv4-mapped, hex", "http://[::ffff:7f00:1]/a.png"],
  ["IPv4-mapped metadata", "http://[::ffff:169.254.169.254]/a.png"],
  ["IPv4-compatible", "http://[::127.0.0.1]:8080/a.png"],
  ["IPv4-compatible, hex", "http://[::7f00:1]/a.png"],
  ["NAT64", "http://[64:ff9b::127.0.0.1]/a.png"],
  ["NAT64 metadata", "http://[64:ff9b::a9fe:a9fe]/a.png"],
  ["NAT64 local-use", "http://[64:ff9b:1::a00:1]/a.png"],
  ["6to4", "http://[2002:7f00:1::1]/a.png"],
  ["6to4 metadata", "http://[2002:a9fe:a9fe::]/a.png"],
  ["Teredo", "http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/a.png"],
  ["trailing dot", "http://localhost./a.png"],
  ["trailing dot, address", "http://127.0.0.1./a.png"],
  ["localhost", "http://localhost:8080/a.png"],
  ["localhost, upper case", "http://LOCALHOST/a.png"],
  ["loopback IPv6", "http://[::1]/a.png"],
  ["unspecified IPv6", "http://[::]/a.png"],
  ["unspecified", "http://0.0.0.0/a.png"],
  ["metadata", "http://169.254.169.254/latest/meta-data/"],
  ["private", "http://192.168.1.10/a.png"],
  ["CGNAT", "http://100.64.0.1/a.png"],
  ["unique-local", "http://[fd00::1]/a.png"],
  ["link-local IPv6", "http://[fe80::1]/a.png"],
  ["internal name", "http://metadata.google.internal/a.png"],
  ["single label", "http://intranet/a.png"]
]

const video = (input: Record<string, unknown>) => ({
  model: "provy-famS-2.0-480p",
  operation: "generation",
  input: { prompt: "a lantern in the rain", reference_mode: "media", ...input },
  output: { duration: 4 }
})

const imageEdit = (input: Record<string, unknown>) => ({
  model: "provx-image-1",
  operation: "edit",
  input: { prompt: "sepia", ...input }
})

type Account = Awaited<ReturnType<typeof createAccount>>

/**
 * Each URL field: how to send a URL in it, and the name the error message
 * gives it. Sent raw, the accepted control as the refused forms: the same
 * request, only the URL differs.
 */
const FIELDS: ReadonlyArray<{
  readonly field: string
  readonly where: string
  readonly send: (gw: TestGateway, account: Account, url: string) => Promise<RawReply>
}> = [
  {
    field: "webhook url",
    where: "Invalid URL",
    send: (gw, a, url) => rawAdmin(gw, "PUT", `/admin/v1/accounts/${a.id}/webhook`, { url })
  },
  {
    field: "video input.image.url",
    where: "input.image",
    send: (gw, a, url) => raw(gw, "POST", "/v1/video/tasks", { key: a.model.key, json: video({ image: { url } }) })
  },
  {
    field: "video input.reference_images[].url",
    where: "input.reference_images[1]",
    send: (gw, a, url) =>
      raw(gw, "POST", "/v1/video/tasks", {
        key: a.model.key,
        json: video({ reference_images: [{ url: PUBLIC }, { url }] })
      })
  },
  {
    field: "video input.reference_videos[].url",
    where: "input.reference_videos[0]",
    send: (gw, a, url) =>
      raw(gw, "POST", "/v1/video/tasks", { key: a.model.key, json: video({ reference_videos: [{ url }] }) })
  },
  {
    field: "video input.reference_audios[].url",
    where: "input.reference_audios[0]",
    // An audio needs a visual reference next to it; the public one passes.
    send: (gw, a, url) =>
      raw(gw, "POST", "/v1/video/tasks", {
        key: a.model.key,
        json: video({ reference_images: [{ url: PUBLIC }], reference_audios: [{ url }] })
      })
  },
  {
    field: "image input.images[].url",
    where: "input.images[0].url",
    send: (gw, a, url) =>
      raw(gw, "POST", "/v1/image/tasks", { key: a.model.key, json: imageEdit({ images: [{ url }] }) })
  },
  {
    field: "image input.mask.url",
    where: "input.mask.url",
    send: (gw, a, url) =>
      raw(gw, "POST", "/v1/image/tasks", {
        key: a.model.key,
        json: imageEdit({ images: [{ url: PUBLIC }], mask: { url } })
      })
  }
]

let gw: TestGateway
beforeAll(async () => {
  gw = await startGateway({ ALLOW_PRIVATE_TARGETS: "false", CONFIG_DIR: unthrottled() })
})
afterAll(() => gw?.close())

describe(`private targets are refused in every URL field (${backend})`, { timeout: 60_000 }, () => {
  it.each(FIELDS)("$field: a public URL is accepted (the request is otherwise valid)", async ({ send }) => {
    const account = await createAccount(gw, { name: "public", wallet_credits: 100 })
    const reply = await send(gw, account, PUBLIC)
    expect([200, 202], JSON.stringify(reply.body)).toContain(reply.status)
  })

  it.each(FIELDS)(
    "$field: every private address form is 400 invalid_request; nothing is created or charged",
    async ({ send, where }) => {
      const account = await createAccount(gw, { name: "strict", wallet_credits: 100 })
      for (const [form, url] of FORMS) {
        const reply = await send(gw, account, url)
        try {
          expectError(reply, 400, "invalid_request", "invalid_request_error")
          expect(errorOf(reply.body)?.message).toContain(where)
          expect(errorOf(reply.body)?.message).toContain("private, loopback and local addresses are not allowed")
        } catch (e) {
          throw new Error(`${form} (${url}): ${(e as Error).message}`)
        }
      }
      expect(await operator(gw).account(account.id)).toMatchObject({ wallet_credits: 100, webhook: null })
      expect((await api(gw, account).listVideos()).data).toEqual([])
      expect((await api(gw, account).listImages()).data).toEqual([])
    }
  )
})
