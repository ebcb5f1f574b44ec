import type { GroupsFile } from "../platform/Settings.ts"
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
 * Credits for a task, in micro-credits: price per unit × units × group
 * multiplier. For video the unit is a requested second (spec, Billing):
 * references, modes and resolution never change it, resolutions being
 * separate models. For images it is an output image.
 */
export const chargeMicros = (pricePerUnit: number, units: number, multiplier: number): number =>
  Math.round(pricePerUnit * MICROS_PER_CREDIT * units * multiplier)
