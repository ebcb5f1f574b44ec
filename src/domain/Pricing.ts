import type { GroupsFile } from "./Settings.ts"
import { MICROS_PER_CREDIT } from "./Money.ts"

/**
 * The multiplier of a group. An aggregate group stands for its members and
 * bills at the cheapest of them (config/groups.json); an unknown group, which
 * config validation and the admin API prevent, bills at 1.
 */
export const groupMultiplier = (groups: GroupsFile, name: string): number => {
  const group = groups.groups[name]
  if (group === undefined) return 1
  if ("multiplier" in group) return group.multiplier
  return Math.min(...group.members.map((member) => groupMultiplier(groups, member)))
}

/**
 * Credits for a video task, in micro-credits: price per second × requested
 * seconds × group multiplier (spec, Billing). References, modes and
 * resolution never change it; resolutions are separate models.
 */
export const videoChargeMicros = (pricePerSecond: number, durationS: number, multiplier: number): number =>
  Math.round(pricePerSecond * MICROS_PER_CREDIT * durationS * multiplier)
