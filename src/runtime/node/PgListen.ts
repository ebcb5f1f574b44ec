import { SqlError } from "@effect/sql/SqlError"
import { Effect, Layer, Redacted, Stream } from "effect"
import Pg from "pg"
import { NotificationListener } from "../../platform/Notifications.ts"

/**
 * LISTEN on a PostgreSQL connection of its own; the stream fails when that
 * connection is lost, so the caller can listen again. (`PgClient.listen` of
 * @effect/sql-pg swallows its listening connection's errors: once the backend
 * is terminated or the network drops, its stream stays open and silent forever.)
 */
export const listenOn = (url: Redacted.Redacted, channel: string) =>
  Stream.asyncPush<string, SqlError>((emit) =>
    Effect.acquireRelease(
      Effect.tryPromise({
        try: async () => {
          const client = new Pg.Client({
            connectionString: Redacted.value(url),
            application_name: "media-task-gateway"
          })
          const lost = (cause: unknown) => emit.fail(new SqlError({ cause, message: "The LISTEN connection was lost" }))
          client.on("error", lost)
          client.on("end", () => lost(new Error("connection ended")))
          client.on("notification", (msg) => {
            if (msg.channel === channel && msg.payload !== undefined) emit.single(msg.payload)
          })
          try {
            await client.connect()
            await client.query(`LISTEN ${Pg.escapeIdentifier(channel)}`)
          } catch (e) {
            await close(client)
            throw e
          }
          return client
        },
        catch: (cause) => new SqlError({ cause, message: "Failed to listen" })
      }),
      (client) => Effect.promise(() => close(client)).pipe(Effect.timeoutOption("1 second"))
    )
  )

const close = (client: Pg.Client) => {
  client.removeAllListeners()
  // An 'error' event with no listener would throw.
  client.on("error", () => {})
  return client.end().catch(() => undefined)
}

/** The Node implementation of the notification port: `pg`, one connection per LISTEN. */
export const NotificationListenerLive = Layer.succeed(NotificationListener, { listen: listenOn })
