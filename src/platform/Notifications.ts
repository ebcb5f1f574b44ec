import * as PgClient from "@effect/sql-pg/PgClient"
import type { SqlError } from "@effect/sql/SqlError"
import { Context, Effect, Option, type Redacted, type Stream } from "effect"
import { AppConfig } from "./AppConfig.ts"

/**
 * The port for LISTEN on a PostgreSQL server: a connection of its own whose
 * stream fails when that connection is lost, so the caller can listen again.
 * The runtime provides it (`src/runtime/node/PgListen.ts` on Node), because
 * it needs a driver of the runtime's own.
 */
export class NotificationListener extends Context.Tag("NotificationListener")<NotificationListener, {
  readonly listen: (url: Redacted.Redacted, channel: string) => Stream.Stream<string, SqlError>
}>() {}

/**
 * NOTIFY payloads of a channel, from whichever database is configured: the
 * embedded PGlite delivers them in-process; on PostgreSQL the runtime's
 * listener holds a connection of its own. A hint only: every consumer also
 * polls, so a lost listener delays work but never loses it.
 */
export const makeListen = Effect.gen(function*() {
  const pg = yield* PgClient.PgClient
  const { databaseUrl } = yield* AppConfig
  const listener = yield* NotificationListener
  return (channel: string): Stream.Stream<string, SqlError> =>
    Option.match(databaseUrl, {
      onNone: () => pg.listen(channel),
      onSome: (url) => listener.listen(url, channel)
    })
})
