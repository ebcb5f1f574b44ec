import { type Scenario, startFakeArk } from "./ark.ts"

/**
 * The fake Ark (./ark.ts) in a process of its own, driven over IPC by
 * test/support/arkProcess.ts: a test that counts requests by their arrival
 * times must not stamp them on its own event loop, where its own work (a
 * client decoding answers, a collection) would hold arrivals back and stamp
 * several at once. Its tasks' timelines are chosen by their prompts:
 * `FAKE_ARK_SCENARIOS` is a JSON list of `{ pattern, scenario }`, the first
 * pattern the prompt matches wins.
 */

const keys = JSON.parse(process.env.FAKE_ARK_KEYS ?? "[]") as Array<string>
const rules = (JSON.parse(process.env.FAKE_ARK_SCENARIOS ?? "[]") as Array<{ pattern: string; scenario: Scenario }>)
  .map(({ pattern, scenario }) => ({ pattern: new RegExp(pattern), scenario }))

export const promptOf = (body: any): string => String(body?.content?.find((c: any) => c?.type === "text")?.text ?? "")

const fake = await startFakeArk(keys, {
  scenarioOf: (body) => rules.find((rule) => rule.pattern.test(promptOf(body)))?.scenario
})

/** What the parent may ask, and what it is answered. */
const handle = (op: string, args: Array<any>): unknown => {
  switch (op) {
    case "throttle":
      return fake.throttle(args[0], args[1])
    case "snapshot":
      return {
        requests: fake.requests.map((r) => ({ at: r.at, method: r.method, path: r.path })),
        throttled: fake.throttled.map((r) => ({ at: r.at, method: r.method, path: r.path })),
        tasks: [...fake.tasks.values()].map((t) => ({ id: t.id, prompt: promptOf(t.body) }))
      }
    case "creates":
      return fake.requests.filter((r) => r.method === "POST").length
    case "throttledCount":
      return fake.throttled.length
    case "seed": {
      // Tasks as if created through the API long ago (a benchmark's standing load): ids, key, one timeline.
      const [ids, key, scenario, body] = args as [Array<string>, string, Scenario, unknown]
      const createdAt = Date.now()
      for (const id of ids) {
        fake.tasks.set(id, { id, key, body, scenario, createdAt, observed: 0, cancelled: false })
      }
      return ids.length
    }
    case "requestTimes":
      return fake.requests.map((r) => r.at)
    default:
      throw new Error(`unknown operation ${op}`)
  }
}

process.on("message", (message: { id: number; op: string; args: Array<unknown> }) => {
  try {
    process.send!({ id: message.id, result: handle(message.op, message.args) })
  } catch (e) {
    process.send!({ id: message.id, error: String(e) })
  }
})
process.on("disconnect", () => fake.close().finally(() => process.exit(0)))
process.send!({ url: fake.url })
