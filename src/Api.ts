import { HttpApi, OpenApi } from "@effect/platform"
import { AdminApi } from "./accounts/Api.ts"
import { AssetsApi } from "./assets/Api.ts"
import { ModelsApi } from "./catalog/Api.ts"
import { ImagesApi } from "./images/Api.ts"
import { OpsApi } from "./ops/Api.ts"
import { AdminChannelsApi } from "./ops/ChannelsApi.ts"
import { InternalError, ServiceBusy } from "./platform/Failure.ts"
import { error } from "./platform/http/ErrorContract.ts"
import { StorageApi } from "./storage/Api.ts"
import { AdminTaskApi } from "./tasks/AdminTaskApi.ts"
import { TaskControlApi, TaskCreateApi, TaskReadApi } from "./tasks/Api.ts"
import { TaskEventsApi } from "./tasks/EventsApi.ts"
import { TaskQuoteApi } from "./tasks/QuoteApi.ts"
import { UploadsApi } from "./uploads/Api.ts"
import { AdminUsageApi } from "./usage/Api.ts"
import { AdminWebhooksApi } from "./webhooks/Api.ts"

/** The whole HTTP contract, from each feature's `Api.ts`; handlers live in each feature's `Http.ts`, so clients can import this alone. */
export class GatewayApi extends HttpApi.make("gateway")
  .add(OpsApi)
  .add(ModelsApi)
  .add(TaskCreateApi)
  .add(TaskReadApi)
  .add(TaskControlApi)
  .add(TaskQuoteApi)
  .add(TaskEventsApi)
  .add(ImagesApi)
  .add(AssetsApi)
  .add(AdminApi)
  .add(AdminWebhooksApi)
  .add(AdminTaskApi)
  .add(AdminChannelsApi)
  .add(AdminUsageApi)
  .add(StorageApi)
  .add(UploadsApi)
  // Any endpoint may fail inside, or find the database too busy; each endpoint declares the rest of what it answers with.
  .addError(error(InternalError))
  .addError(error(ServiceBusy))
  .annotate(OpenApi.Title, "Media task gateway")
{}
