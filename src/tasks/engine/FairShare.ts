/**
 * Whose queued tasks a channel starts next (docs/engine.md, Fair share
 * between accounts). A pure plan over the channel's lanes (one per account
 * with tasks queued or in flight there, `task_lanes`), so the claim that
 * carries it out (sql/claimTasks.ts) reads a row per active account, never a
 * row per task.
 *
 * Each free slot goes, one at a time, to the lane with the least work in
 * flight relative to its weight, counting the slots already planned: a lane
 * of weight 3 is given slots until it has three times the tasks in flight of
 * a busy lane of weight 1, which is how a channel's slots, and so its
 * throughput, are shared 3:1 between two busy accounts whose tasks take as
 * long. It is the water-filling form of weighted fair queueing (deficit
 * round robin's goal, with the slots in flight as the service counted, since
 * an upstream account is capped by tasks at once, not by requests). Between
 * lanes equally loaded, the one served least lately (its starts of the last
 * minutes, decayed, against its weight) goes first, as deficit round robin
 * serves the lane with the most credit left: slots that free one at a time
 * are handed round rather than kept by one account (with three slots and
 * two accounts, the one holding two would otherwise win every tie that
 * followed its own finishes). Then the one whose oldest queued task is older. With `group`, the groups are served so first (each
 * group's work in flight against its weight), then the accounts within the
 * chosen group, equally.
 * A lane at its group's `max_in_flight_per_channel` is passed over.
 */

export interface Lane {
  readonly account: string
  readonly group: string
  readonly queued: number
  readonly inFlight: number
  /** Its tasks started lately: each start counts 1, decaying by e every minute (migration 21). */
  readonly served: number
  /** The queue position (`seq`) of its oldest queued task; null when none is queued. */
  readonly oldest: number | null
}

export interface Shares {
  /** `account`: each account against the others; `group`: each group, then its accounts. */
  readonly by: "account" | "group"
  readonly weightOf: (group: string) => number
  /** The most tasks one account of the group may have in flight on the channel; undefined for no cap. */
  readonly capOf: (group: string) => number | undefined
}

/** How many tasks to claim from each account. */
export type ClaimPlan = ReadonlyArray<{ readonly account: string; readonly n: number }>

interface Slotting {
  readonly lane: Lane
  given: number
}

interface Turn {
  readonly load: number
  readonly served: number
  readonly oldest: number
}

const open = (s: Slotting, shares: Shares) => {
  const cap = shares.capOf(s.lane.group)
  return s.given < s.lane.queued && (cap === undefined || s.lane.inFlight + s.given < cap)
}

/** Less in flight first, then less served lately, then the older head (which moves back by one per slot given). */
const before = (a: Turn, b: Turn) =>
  a.load !== b.load ? a.load < b.load : a.served !== b.served ? a.served < b.served : a.oldest < b.oldest

const turnOf = (s: Slotting, weight: number): Turn => ({
  load: (s.lane.inFlight + s.given) / weight,
  served: (s.lane.served + s.given) / weight,
  oldest: (s.lane.oldest ?? Number.MAX_SAFE_INTEGER) + s.given
})

/** The open lane of `lanes` whose turn it is, by `weight` each; undefined when none is open. */
const next = (lanes: ReadonlyArray<Slotting>, shares: Shares, weightOf: (s: Slotting) => number) => {
  let best: { lane: Slotting; turn: Turn } | undefined
  for (const s of lanes) {
    if (!open(s, shares)) continue
    const turn = turnOf(s, weightOf(s))
    if (best === undefined || before(turn, best.turn)) best = { lane: s, turn }
  }
  return best
}

/**
 * Up to `slots` tasks, planned slot by slot. Each step looks at every lane
 * (or group), so a plan costs slots × active lanes; the claim asks for at
 * most a batch of slots at a time.
 */
export const planClaims = (lanes: ReadonlyArray<Lane>, slots: number, shares: Shares): ClaimPlan => {
  const slotting: Array<Slotting> = lanes.filter((l) => l.queued > 0).map((lane) => ({ lane, given: 0 }))
  if (shares.by === "account") {
    for (let i = 0; i < slots; i++) {
      const chosen = next(slotting, shares, (s) => shares.weightOf(s.lane.group))
      if (chosen === undefined) break
      chosen.lane.given++
    }
  } else {
    // A group's work in flight counts its accounts' lanes that have nothing queued too; so does its service.
    const groups = new Map<string, { lanes: Array<Slotting>; inFlight: number; given: number; served: number }>()
    for (const lane of lanes) {
      const group = groups.get(lane.group) ?? { lanes: [], inFlight: 0, given: 0, served: 0 }
      group.inFlight += lane.inFlight
      group.served += lane.served
      groups.set(lane.group, group)
    }
    for (const s of slotting) groups.get(s.lane.group)!.lanes.push(s)
    for (let i = 0; i < slots; i++) {
      let chosen: { lane: Slotting; group: { given: number }; turn: Turn } | undefined
      for (const [name, group] of groups) {
        // Within a group, accounts are served equally.
        const lane = next(group.lanes, shares, () => 1)
        if (lane === undefined) continue
        const weight = shares.weightOf(name)
        const turn = {
          load: (group.inFlight + group.given) / weight,
          served: (group.served + group.given) / weight,
          oldest: lane.turn.oldest
        }
        if (chosen === undefined || before(turn, chosen.turn)) chosen = { lane: lane.lane, group, turn }
      }
      if (chosen === undefined) break
      chosen.lane.given++
      chosen.group.given++
    }
  }
  return slotting.filter((s) => s.given > 0).map((s) => ({ account: s.lane.account, n: s.given }))
}
