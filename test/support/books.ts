import { expect } from "vitest"
import type { Rows } from "./installation.ts"

/**
 * Per task: one charge; one refund exactly when it failed, giving the charge
 * back; one outbox event of the task's terminal type; one asset (or
 * `assetsPerSuccess`) when it succeeded, none when it failed. Per account: the balances are the credits
 * granted minus the charges plus the refunds.
 */
export const checkBooks = async (
  rows: Rows,
  accountId: string,
  granted: { wallet: number; subscription: number },
  expected: ReadonlyMap<string, "succeeded" | "failed">,
  /** How many assets a succeeded task has (a test completing tasks by hand may store none). */
  assetsPerSuccess = 1
) => {
  const tasks = await rows(`SELECT id, status, attempt FROM tasks WHERE account_id = $1`, [accountId])
  const ledger = await rows(
    `SELECT task_id, kind, wallet_micros::float8 AS wallet, subscription_micros::float8 AS subscription
     FROM ledger WHERE account_id = $1 AND kind <> 'credit'`,
    [accountId]
  )
  const events = await rows(`SELECT task_id, type FROM webhook_events WHERE account_id = $1`, [accountId])
  const assets = await rows(`SELECT task_id FROM assets WHERE account_id = $1`, [accountId])
  const [account] = await rows(
    `SELECT wallet_micros::float8 AS wallet, subscription_micros::float8 AS subscription FROM accounts WHERE id = $1`,
    [accountId]
  )

  expect(new Set(tasks.map((t) => t.id))).toEqual(new Set(expected.keys()))
  for (const task of tasks) {
    const status = expected.get(task.id)!
    expect(task.status, task.id).toBe(status)
    const charges = ledger.filter((l) => l.task_id === task.id && l.kind === "charge")
    const refunds = ledger.filter((l) => l.task_id === task.id && l.kind === "refund")
    expect(charges, task.id).toHaveLength(1)
    expect(charges[0].wallet + charges[0].subscription, task.id).toBeLessThan(0)
    expect(refunds, task.id).toHaveLength(status === "failed" ? 1 : 0)
    for (const refund of refunds) {
      expect(refund.wallet + charges[0].wallet, task.id).toBe(0)
      expect(refund.subscription + charges[0].subscription, task.id).toBe(0)
    }
    expect(events.filter((e) => e.task_id === task.id).map((e) => e.type), task.id).toEqual([`video.task.${status}`])
    expect(assets.filter((a) => a.task_id === task.id), task.id).toHaveLength(
      status === "succeeded" ? assetsPerSuccess : 0
    )
  }
  expect(ledger.every((l) => expected.has(l.task_id))).toBe(true)
  const sum = (key: "wallet" | "subscription") => ledger.reduce((acc, l) => acc + l[key], 0)
  expect(account.wallet).toBe(granted.wallet * 1_000_000 + sum("wallet"))
  expect(account.subscription).toBe(granted.subscription * 1_000_000 + sum("subscription"))
  return tasks
}
