import { HttpApiBuilder } from "@effect/platform"
import { Layer } from "effect"
import { AdminAuthLive } from "../accounts/Auth.ts"
import { GatewayApi } from "../Api.ts"
import { taskAudit } from "./TaskAudit.ts"

/** `GET /admin/v1/tasks/{id}` (AdminTaskApi.ts), behind the admin token like the rest of the admin API. */
export const AdminTasksLive = HttpApiBuilder.group(
  GatewayApi,
  "adminTasks",
  (handlers) => handlers.handle("getTask", ({ path }) => taskAudit(path.id))
).pipe(Layer.provide(AdminAuthLive))
