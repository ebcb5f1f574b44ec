import { HttpApi, OpenApi } from "@effect/platform"
import { AdminApi } from "./AdminApi.ts"
import { AssetsApi } from "./AssetsApi.ts"
import { ApiErrorWire } from "./Errors.ts"
import { ImagesApi } from "./ImagesApi.ts"
import { ModelsApi } from "./ModelsApi.ts"
import { OpsApi } from "./OpsApi.ts"
import { StorageApi } from "./StorageApi.ts"
import { TaskCreateApi, TaskReadApi } from "./TasksApi.ts"
import { UploadsApi } from "./UploadsApi.ts"

/** The whole HTTP contract; handlers live in `src/http/`, so clients can import this alone. */
export class GatewayApi extends HttpApi.make("gateway")
  .add(OpsApi)
  .add(ModelsApi)
  .add(TaskCreateApi)
  .add(TaskReadApi)
  .add(ImagesApi)
  .add(AssetsApi)
  .add(AdminApi)
  .add(StorageApi)
  .add(UploadsApi)
  .addError(ApiErrorWire)
  .annotate(OpenApi.Title, "Media task gateway")
{}
