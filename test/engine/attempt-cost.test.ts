// Runs once: no database
import { describe, expect, it } from "vitest"
import { costOf, nothingRan, outputsOf, presumedBilled, type Pricing } from "../../src/tasks/engine/AttemptCost.ts"

/**
 * How an attempt's usage and cost are made of what the engine knows
 * (src/tasks/engine/AttemptCost.ts): the provider's count where it is in the
 * route's unit, else the outputs stored, else the request; the route's price
 * applied in micro-units; nothing for an attempt the provider does not bill.
 */

const video = (cost?: Pricing["cost"]): Pricing => ({ cost, requested: { unit: "second", quantity: 5 } })
const image = (cost?: Pricing["cost"]): Pricing => ({ cost, requested: { unit: "image", quantity: 2 } })
const tokens = { unit: "token", quantity: 108_900, fields: { completion_tokens: 108_900 } } as const

describe("an attempt's cost", () => {
  it("the provider's count in the route's unit, priced in micro-units", () => {
    expect(costOf(video({ unit: "token", price: 0.0000012 }), { billed: true, usage: tokens })).toEqual({
      usage: { unit: "token", quantity: 108_900, reported: true, source: "answer", completion_tokens: 108_900 },
      costMicros: 130_680,
      billed: true
    })
  })

  it("another unit than the provider's: the outputs stored, the provider's fields kept beside", () => {
    const outputs = outputsOf([{ durationMs: 5_040 }])
    expect(costOf(video({ unit: "second", price: 0.1 }), { billed: true, usage: tokens, outputs })).toEqual({
      usage: { unit: "second", quantity: 5.04, reported: true, source: "outputs", completion_tokens: 108_900 },
      costMicros: 504_000,
      billed: true
    })
    // Images are counted whatever their probe says.
    expect(costOf(image({ unit: "image", price: 0.04 }), { billed: true, outputs: outputsOf([{}, {}, {}]) }))
      .toMatchObject({ usage: { unit: "image", quantity: 3, source: "outputs" }, costMicros: 120_000 })
  })

  it("no count and no probed output: what the request implies, not reported", () => {
    expect(costOf(video({ unit: "second", price: 0.1 }), { billed: true, outputs: outputsOf([{ durationMs: null }]) }))
      .toEqual({
        usage: { unit: "second", quantity: 5, reported: false, source: "request" },
        costMicros: 500_000,
        billed: true
      })
    expect(costOf(image({ unit: "task", price: 0.5 }), { billed: true }).usage).toMatchObject({
      unit: "task",
      quantity: 1
    })
  })

  it("a unit only the provider counts, not reported: the request's seconds kept, the cost unknown", () => {
    expect(costOf(video({ unit: "token", price: 0.0000012 }), { billed: true })).toEqual({
      usage: { unit: "second", quantity: 5, reported: false, source: "request" },
      costMicros: null,
      billed: true
    })
  })

  it("not billed: cost 0 where a cost is declared, the usage kept; no cost declared: null", () => {
    const usage = { unit: "second", quantity: 3.5 } as const
    expect(costOf(video({ unit: "second", price: 0.1 }), { billed: false, usage })).toMatchObject({
      usage: { unit: "second", quantity: 3.5 },
      costMicros: 0,
      billed: false
    })
    expect(costOf(video(), { billed: true, usage })).toMatchObject({
      usage: { unit: "second", quantity: 3.5, source: "answer" },
      costMicros: null
    })
  })

  it("nothing ran: no usage, nothing billed; a fate unknown: billed with what the request implies", () => {
    expect(nothingRan({ unit: "second", price: 1 })).toEqual({ usage: null, costMicros: 0, billed: false })
    expect(nothingRan(undefined)).toEqual({ usage: null, costMicros: null, billed: false })
    expect(presumedBilled(video({ unit: "second", price: 0.08 }))).toEqual({
      usage: { unit: "second", quantity: 5, reported: false, source: "request" },
      costMicros: 400_000,
      billed: true
    })
  })

  it("a provider field named like ours never replaces the count or its origin", () => {
    const usage = { unit: "second", quantity: 2, fields: { quantity: 99, unit: "frames", source: "x" } } as const
    expect(costOf(video(), { billed: true, usage }).usage).toEqual({
      unit: "second",
      quantity: 2,
      reported: true,
      source: "answer"
    })
  })
})
