import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { AccountNotFound } from "../accounts/Errors.ts"
import { AdminAuth } from "../accounts/Security.ts"
import { BodyErrors, errors, httpFailures, ResourceId } from "../platform/http/ErrorContract.ts"
import { jsonBody } from "../platform/http/OpenApiBody.ts"
import { InvalidTargetUrl } from "../platform/TargetUrl.ts"
import { InvalidReplay, UnknownEventCursor, WebhookNotConfigured } from "./Errors.ts"
import { WebhookEventList } from "./EventRecord.ts"
import { ReplayQueued, ReplayRequest, WebhookRequest, WebhookSettings } from "./Webhook.ts"

const accountPath = Schema.Struct({ id: ResourceId(() => new AccountNotFound({ message: "No such account." })) })

/** A change to an account's webhook: the account must exist, and rotating or testing needs a URL set. */
const WebhookChange = errors(AccountNotFound, WebhookNotConfigured)

/**
 * The operator's side of an account's webhook (docs/webhooks.md): its URL,
 * its key, a test event and the delivery history. Bearer `ADMIN_TOKEN`, as
 * the rest of the admin API.
 */
export class AdminWebhooksApi extends HttpApiGroup.make("adminWebhooks")
  .add(
    HttpApiEndpoint.put("setWebhook", "/admin/v1/accounts/:id/webhook").setPath(accountPath)
      .addSuccess(WebhookSettings)
      .addError(BodyErrors).addError(errors(AccountNotFound, InvalidTargetUrl))
      .annotate(OpenApi.Override, jsonBody(WebhookRequest))
  )
  .add(
    HttpApiEndpoint.post("rotateWebhookKey", "/admin/v1/accounts/:id/webhook/rotate").setPath(accountPath)
      .addSuccess(Schema.Struct({ key: Schema.String }))
      .addError(WebhookChange)
  )
  .add(
    HttpApiEndpoint.post("testWebhook", "/admin/v1/accounts/:id/webhook/test").setPath(accountPath)
      .addSuccess(Schema.Struct({ object: Schema.Literal("webhook.test.queued"), event_id: Schema.String }), {
        status: 202
      })
      .addError(WebhookChange)
  )
  .add(
    HttpApiEndpoint.get("listWebhookEvents", "/admin/v1/accounts/:id/webhook/events").setPath(accountPath)
      .addSuccess(WebhookEventList)
      .addError(httpFailures(400)).addError(errors(AccountNotFound, UnknownEventCursor))
      .annotate(OpenApi.Description, "Recent events, newest first, with every delivery attempt; ?status=&limit=&after=")
  )
  .add(
    HttpApiEndpoint.post("replayWebhookEvents", "/admin/v1/accounts/:id/webhook/replay").setPath(accountPath)
      .addSuccess(ReplayQueued, { status: 202 })
      .addError(BodyErrors).addError(errors(AccountNotFound, WebhookNotConfigured, InvalidReplay))
      .annotate(OpenApi.Override, jsonBody(ReplayRequest))
      .annotate(OpenApi.Description, "The account's events created in [from, to) (Unix seconds) sent again, same ids")
  )
  .middleware(AdminAuth)
  .annotate(OpenApi.Title, "Admin: webhooks")
  .annotate(OpenApi.Description, "An account's webhook settings, test event and delivery history; bearer ADMIN_TOKEN")
{}
