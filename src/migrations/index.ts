import accounts from "./0001_accounts.ts"
import tasks from "./0002_tasks.ts"
import taskCreation from "./0003_task_creation.ts"
import engine from "./0004_engine.ts"
import webhooks from "./0005_webhooks.ts"
import uploads from "./0006_uploads.ts"
import taskOrder from "./0007_task_order.ts"
import uploadLifecycle from "./0008_upload_lifecycle.ts"
import assets from "./0009_assets.ts"
import requestVersion from "./0010_request_version.ts"
import consoleSessions from "./0011_console.ts"
import waiting from "./0012_waiting.ts"
import inFlight from "./0013_in_flight.ts"
import pollNudges from "./0014_poll_nudges.ts"
import storageWaits from "./0015_storage_waits.ts"
import pollingState from "./0016_polling_state.ts"
import deadlines from "./0017_deadlines.ts"
import channelOperations from "./0018_channel_operations.ts"
import taskChanges from "./0019_task_changes.ts"
import recentWindows from "./0020_recent_windows.ts"
import fairShare from "./0021_fair_share.ts"
import upstreamBudgets from "./0022_upstream_budgets.ts"
import spendLimits from "./0023_spend_limits.ts"
import upstreamCost from "./0024_upstream_cost.ts"
import usageDaily from "./0025_usage_daily.ts"
import webhookSubscriptions from "./0026_webhook_subscriptions.ts"
import retention from "./0027_retention.ts"
import createTask from "./0028_create_task.ts"

/**
 * Forward-only migrations, in order. Each is a list of PostgreSQL statements
 * run in one transaction; a migration is never edited once released.
 */
export const migrations: ReadonlyArray<readonly [id: number, name: string, statements: ReadonlyArray<string>]> = [
  [1, "accounts", accounts],
  [2, "tasks", tasks],
  [3, "task_creation", taskCreation],
  [4, "engine", engine],
  [5, "webhooks", webhooks],
  [6, "uploads", uploads],
  [7, "task_order", taskOrder],
  [8, "upload_lifecycle", uploadLifecycle],
  [9, "assets", assets],
  [10, "request_version", requestVersion],
  [11, "console", consoleSessions],
  [12, "waiting", waiting],
  [13, "in_flight", inFlight],
  [14, "poll_nudges", pollNudges],
  [15, "storage_waits", storageWaits],
  [16, "polling_state", pollingState],
  [17, "deadlines", deadlines],
  [18, "channel_operations", channelOperations],
  [19, "task_changes", taskChanges],
  [20, "recent_windows", recentWindows],
  [21, "fair_share", fairShare],
  [22, "upstream_budgets", upstreamBudgets],
  [23, "spend_limits", spendLimits],
  [24, "upstream_cost", upstreamCost],
  [25, "usage_daily", usageDaily],
  [26, "webhook_subscriptions", webhookSubscriptions],
  [27, "retention", retention],
  [28, "create_task", createTask]
]
