import { SqlClient } from "@effect/sql"
import { Clock, Context, Effect, Layer, Option, ParseResult, Schema, Scope } from "effect"
import { AppConfig, ConfigurationError } from "../platform/AppConfig.ts"
import { loadExtension } from "../platform/Extensions.ts"
import { Metrics } from "../platform/metrics/Metrics.ts"
import { LEGACY_CHANNEL, modelRoutes } from "../platform/Settings.ts"
import {
  type AnyAdapter,
  type ChannelCheck,
  type ChannelPorts,
  type ChannelRunner,
  type ChannelWarning,
  channelWarning,
  isAdapter,
  ProviderOptions,
  TaskKind
} from "./contract/Adapter.ts"
import { ChannelSettings } from "./contract/ChannelSettings.ts"
import { isAsyncRunner } from "./contract/Upstream.ts"
import { meteredRunner } from "./MeteredRunner.ts"
import { budgetOf } from "./Pacing.ts"
import { type ChannelBudget, makeChannelBudget } from "./UpstreamBudget.ts"

/** A configured channel: its adapter and its settings, checked and with secrets resolved. */
export interface LoadedChannel {
  readonly name: string
  readonly adapter: AnyAdapter
  readonly settings: ChannelSettings & Readonly<Record<string, unknown>>
  /** The channel's warning log (Adapter.ts, `Channel.warn`). */
  readonly warn: ChannelWarning
}

export interface ChannelsService {
  readonly get: (name: string) => LoadedChannel | undefined
  readonly all: ReadonlyArray<LoadedChannel>
  /**
   * The channel's runner, made on first use and kept for the life of the
   * service (the engine asks at start for each channel it works, so a
   * broken adapter stops the boot; the API role never makes one).
   */
  readonly runner: (name: string) => Effect.Effect<ChannelRunner, ConfigurationError>
  /**
   * The adapter's check of a configured channel (one free, harmless upstream
   * call), timed; never fails. An adapter without one answers
   * `unexpected_answer` saying so.
   */
  readonly check: (channel: LoadedChannel) => Effect.Effect<ChannelCheck & { readonly latencyMs: number }>
  /** The channel's upstream request budget, when it has one (`requests_per_second`) and the database is there. */
  readonly budget: (name: string) => ChannelBudget | undefined
}

/** Where an adapter says which upstream a channel talks to: its `base_url` setting, when it has one. */
export const baseUrlOf = (channel: LoadedChannel): string | null =>
  typeof channel.settings.base_url === "string" ? channel.settings.base_url : null

const BUILTIN_ADAPTERS = new URL("../../channels/", import.meta.url)

const formatIssues = (where: string, error: ParseResult.ParseError) =>
  ParseResult.ArrayFormatter.formatErrorSync(error)
    .map((issue) => `  at ${[where, ...issue.path].join(".")}: ${issue.message}`)
    .join("\n")

/** The adapter's default export, checked to be one (its kinds and provider options too). */
const loadAdapter = (name: string, ref: string) =>
  Effect.gen(function*() {
    const where = `channels.${name}.adapter`
    const exported = yield* loadExtension(ref, BUILTIN_ADAPTERS, "adapter", where)
    const refused = (problem: string) =>
      new ConfigurationError({ message: `config models.json: at ${where}: adapter "${ref}" ${problem}` })
    if (!isAdapter(exported)) return yield* refused("does not export defineAdapter(...) as its default")
    if (!exported.kinds.every(Schema.is(TaskKind))) {
      return yield* refused(`declares unknown kinds: ${(exported.kinds as ReadonlyArray<string>).join(", ")}`)
    }
    for (const kind of TaskKind.literals) {
      const options = exported.providerOptions[kind]
      if (options === undefined) continue
      if (!exported.kinds.includes(kind)) {
        return yield* refused(`declares ${kind} provider options but does not serve ${kind}`)
      }
      yield* Schema.decodeUnknown(ProviderOptions, { onExcessProperty: "error" })(options).pipe(
        Effect.mapError((e) =>
          refused(`has invalid ${kind} provider options\n${ParseResult.TreeFormatter.formatErrorSync(e)}`)
        )
      )
    }
    return exported
  })

/**
 * One entry of `channels`: the common settings merged with the adapter's own,
 * decoded as one Schema so a key neither knows is refused, and `{ "env" }`
 * secrets are read from the environment.
 */
const loadChannel = (name: string, entry: Readonly<Record<string, unknown>>) =>
  Effect.gen(function*() {
    const ref = entry.adapter ?? (name === LEGACY_CHANNEL ? LEGACY_CHANNEL : undefined)
    if (typeof ref !== "string") {
      return yield* new ConfigurationError({
        message: `config models.json: at channels.${name}.adapter: is missing (the adapter this channel runs)`
      })
    }
    const adapter = yield* loadAdapter(name, ref)
    const schema = yield* Effect.try({
      try: () => Schema.extend(ChannelSettings, adapter.settings),
      catch: (e) =>
        new ConfigurationError({
          message: `adapter "${ref}": its settings Schema cannot be merged with the common settings (${
            (e as Error).message
          })`
        })
    })
    const settings = yield* Schema.decodeUnknown(schema, { onExcessProperty: "error", errors: "all" })({
      ...entry,
      adapter: ref
    }).pipe(
      Effect.mapError((e) =>
        new ConfigurationError({
          message: `config models.json: invalid channel "${name}"\n${formatIssues(`channels.${name}`, e)}`
        })
      )
    )
    if ((settings as ChannelSettings).callbacks && adapter.callbacks === undefined) {
      return yield* new ConfigurationError({
        message:
          `config models.json: at channels.${name}.callbacks: adapter "${ref}" cannot take upstream callbacks (its protocol has none)`
      })
    }
    const channel: LoadedChannel = {
      name,
      adapter,
      settings: settings as LoadedChannel["settings"],
      warn: channelWarning(name)
    }
    return channel
  })

/**
 * The channels `config/models.json` configures, each with its adapter loaded
 * by name (never imported by the core) and its settings checked at boot.
 */
export class Channels extends Context.Tag("Channels")<Channels, ChannelsService>() {
  static readonly layer = Layer.scoped(
    Channels,
    Effect.gen(function*() {
      const { models } = yield* AppConfig
      const loaded = yield* Effect.forEach(Object.entries(models.channels), ([name, entry]) => loadChannel(name, entry))
      // What each channel's check asks its upstream about: the upstream models its routes name, each once.
      const routed = new Map<string, Set<string>>()
      for (const [id, model] of Object.entries(models.models)) {
        if (model.enabled === false) continue
        for (const route of modelRoutes(id, model, models.channels)) {
          routed.set(route.channel, (routed.get(route.channel) ?? new Set()).add(route.upstreamModel))
        }
      }
      const byName = new Map(loaded.map((c) => [c.name, c]))
      // Runners are made later, in this layer's scope, with the ports it was built with.
      const ports = yield* Effect.context<ChannelPorts>()
      const scope = yield* Effect.scope
      const metrics = yield* Metrics
      // A request budget is kept in the database, shared by every replica (UpstreamBudget.ts). A composition
      // without one (a boot check of the configuration) loads the channels but makes no budgeted runner.
      const sql = yield* Effect.serviceOption(SqlClient.SqlClient)
      const budgets = new Map<string, ChannelBudget>()
      if (Option.isSome(sql)) {
        for (const channel of loaded) {
          const budget = budgetOf(channel.settings)
          if (budget !== undefined) budgets.set(channel.name, yield* makeChannelBudget(sql.value, channel.name, budget))
        }
      }

      const make = (name: string) =>
        Effect.gen(function*() {
          const channel = byName.get(name)
          if (channel === undefined) {
            return yield* new ConfigurationError({ message: `channel "${name}" is not configured` })
          }
          if (budgetOf(channel.settings) !== undefined && !budgets.has(name)) {
            return yield* new ConfigurationError({
              message: `channel "${name}": requests_per_second needs the database, where every replica shares it`
            })
          }
          const runner = yield* channel.adapter.make(channel).pipe(
            Effect.provide(ports),
            Scope.extend(scope),
            Effect.catchAllDefect((defect) =>
              new ConfigurationError({
                message: `channel "${name}": adapter "${channel.adapter.name}" failed to start: ${String(defect)}`
              })
            )
          )
          const missing = channel.adapter.kinds.find((kind) =>
            !isAsyncRunner(runner[kind]) &&
            typeof (runner[kind] as { generate?: unknown } | undefined)?.generate !== "function"
          )
          if (missing !== undefined) {
            return yield* new ConfigurationError({
              message: `channel "${name}": adapter "${channel.adapter.name}" gave no ${missing} runner`
            })
          }
          yield* Effect.logInfo("channel ready").pipe(
            Effect.annotateLogs({ channel: name, adapter: channel.adapter.name })
          )
          return meteredRunner(name, runner, metrics, {
            timeouts: channel.settings.timeouts,
            budget: budgets.get(name)
          })
        })
      // Once per channel, failures included: a second caller waits for the first make.
      const runner = yield* Effect.cachedFunction(make)

      const check = (channel: LoadedChannel) =>
        Effect.gen(function*() {
          // The check is a request like any other: at its slot, counted with the reads.
          const budget = budgets.get(channel.name)
          if (budget !== undefined) {
            const slot = yield* Effect.either(budget.take("check"))
            if (slot._tag === "Left") {
              return {
                result: "unexpected_answer",
                detail: `no request slot could be reserved: ${slot.left.reason}`,
                latencyMs: 0
              } satisfies ChannelCheck & { readonly latencyMs: number }
            }
          }
          const started = yield* Clock.currentTimeMillis
          const found: ChannelCheck = channel.adapter.check === undefined
            ? { result: "unexpected_answer", detail: `adapter "${channel.adapter.name}" has no check` }
            : yield* channel.adapter.check(channel, [...routed.get(channel.name) ?? []]).pipe(
              Effect.provide(ports),
              Effect.catchAllDefect((defect) =>
                Effect.succeed<ChannelCheck>({
                  result: "unexpected_answer",
                  detail: `the check died: ${String(defect)}`
                })
              )
            )
          return { ...found, latencyMs: (yield* Clock.currentTimeMillis) - started }
        })

      return { get: (name) => byName.get(name), all: loaded, runner, check, budget: (name) => budgets.get(name) }
    })
  )
}
