import {
  CopyObjectCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  type PutObjectCommandInput,
  S3Client
} from "@aws-sdk/client-s3"
import { getSignedUrl } from "@aws-sdk/s3-request-presigner"
import { FileSystem } from "@effect/platform"
import { Clock, Deferred, Effect, identity, Option, Redacted, Stream } from "effect"
import { AppConfig } from "../platform/AppConfig.ts"
import type { Environment } from "../platform/AppConfig.ts"
import type { ObjectStorageBackend } from "./ObjectStorageBackend.ts"
import { S3RequestBody } from "./S3RequestBody.ts"
import {
  checkContentType,
  checkKey,
  checkLifetime,
  checkPresignPut,
  StorageError,
  type StorageFault
} from "./StorageError.ts"

export type S3Options = Option.Option.Value<Environment["s3"]>

const DEFAULT_TYPE = "application/octet-stream"
/** The object the readiness probe asks about; it is never written. */
const PROBE_KEY = "health/probe"

const statusOf = (cause: unknown): number | undefined =>
  (cause as { $metadata?: { httpStatusCode?: number } } | null)?.$metadata?.httpStatusCode

const describe = (cause: unknown) => cause instanceof Error ? `${cause.name}: ${cause.message}` : String(cause)

/**
 * No answer (refused, reset, DNS, a time-out), a 5xx, 408 or 429: the store
 * is away and may be back. Any other answer (403 AccessDenied, 404
 * NoSuchBucket, 400 EntityTooLarge, ...) is the store saying no for good.
 */
const faultOf = (cause: unknown): StorageFault => {
  const status = statusOf(cause)
  if (status === undefined || status >= 500 || status === 408 || status === 429) return "unavailable"
  return "refused"
}

/** A 404 that means "no such object"; a missing bucket is a refusal, not an absent object. */
const isAbsentObject = (cause: unknown) =>
  statusOf(cause) === 404 && (cause as { name?: unknown } | null)?.name !== "NoSuchBucket"

/** `bytes a-b/total` → total. */
const totalOf = (contentRange: string | undefined): number | undefined => {
  const total = /\/(\d+)$/.exec(contentRange ?? "")?.[1]
  return total === undefined ? undefined : Number(total)
}

/**
 * S3 or any S3-compatible service. Pre-signed URLs point straight at the
 * bucket, so uploads and downloads never pass through this service.
 */
export const makeS3ObjectStorage = (options: S3Options) =>
  Effect.gen(function*() {
    const { bucket } = options
    const { limits } = yield* AppConfig
    const timeoutMs = Math.round(limits.storage.request_timeout_s * 1000)
    const requestBody = yield* S3RequestBody
    const fs = yield* FileSystem.FileSystem
    const credentials = Option.all({ accessKeyId: options.accessKeyId, secretAccessKey: options.secretAccessKey })
    const client = yield* Effect.acquireRelease(
      Effect.sync(() =>
        new S3Client({
          region: options.region,
          ...Option.match(options.endpoint, {
            onNone: () => ({}),
            // S3-compatible services (MinIO, s3rver, …) rarely have per-bucket host names.
            onSome: (endpoint) => ({ endpoint, forcePathStyle: true })
          }),
          // Without credentials the SDK's default chain applies (environment, profile, instance role).
          ...Option.match(credentials, {
            onNone: () => ({}),
            onSome: ({ accessKeyId, secretAccessKey }) => ({
              credentials: { accessKeyId, secretAccessKey: Redacted.value(secretAccessKey) }
            })
          }),
          // By default the SDK adds a CRC32 of the (empty) body to a pre-signed PUT URL, which
          // S3 then holds against the real upload; checksums only where an operation requires one.
          requestChecksumCalculation: "WHEN_REQUIRED",
          // A store that takes connections and never answers (blackholed) must fail, not hold a worker or a
          // caller forever: a connection not made, or a socket silent, for `request_timeout_s` is an error.
          requestHandler: { connectionTimeout: timeoutMs, socketTimeout: timeoutMs }
        })
      ),
      (client) => Effect.sync(() => client.destroy())
    )

    /**
     * One request. Those that carry no body of unknown length (all but the
     * streamed PUT) must end within `request_timeout_s` in all, the SDK's own
     * retries included: a caller waiting on them is answered 503, not left hanging.
     */
    const call = <A>(what: string, key: string, run: (abortSignal: AbortSignal) => Promise<A>, bounded = true) =>
      Effect.tryPromise({
        try: run,
        catch: (cause) =>
          new StorageError({ message: `S3 ${what} of ${key} failed: ${describe(cause)}`, fault: faultOf(cause), cause })
      }).pipe(
        bounded
          ? Effect.timeoutFail({
            duration: timeoutMs,
            onTimeout: () =>
              new StorageError({
                message: `S3 ${what} of ${key} got no answer within ${timeoutMs} ms.`,
                fault: "unavailable"
              })
          })
          : identity
      )
    const orNone = <A>(effect: Effect.Effect<A, StorageError>) =>
      effect.pipe(
        Effect.map(Option.some),
        Effect.catchIf((e) => isAbsentObject(e.cause), () => Effect.succeedNone)
      )

    /** One PutObject; `body` is bytes or what S3RequestBody made of a stream, `length` its exact size. */
    const putObject = (key: string, body: unknown, length: number, contentType: string, bounded: boolean) =>
      call("PUT", key, (abortSignal) =>
        client.send(
          new PutObjectCommand({
            Bucket: bucket,
            Key: key,
            Body: body as PutObjectCommandInput["Body"],
            ContentType: contentType,
            ContentLength: length
          }),
          { abortSignal }
        ), bounded)
    const checkPut = (key: string, contentType: string) => Effect.zipRight(checkKey(key), checkContentType(contentType))

    const putStream: ObjectStorageBackend["putStream"] = (key, body, contentLength, contentType) =>
      Effect.gen(function*() {
        yield* checkPut(key, contentType)
        // The SDK pipes the body into the request, which would wait forever for the rest of a body that
        // failed or came short: such a body fails the race, and losing it aborts the request.
        const failed = yield* Deferred.make<never, StorageError>()
        const mismatch = (sent: number) =>
          new StorageError({
            message: `S3 PUT of ${key}: ${sent} bytes where ${contentLength} were announced.`,
            fault: "invalid"
          })
        let sent = 0
        const checked = body.pipe(
          Stream.tap((chunk) => {
            sent += chunk.length
            return sent > contentLength ? Effect.fail(mismatch(sent)) : Effect.void
          }),
          Stream.concat(Stream.suspend(() => sent === contentLength ? Stream.empty : Stream.fail(mismatch(sent)))),
          Stream.tapError((e) => Deferred.fail(failed, e))
        )
        const sdkBody = yield* requestBody.fromStream(checked)
        // A body of any size: the socket's idle time-out bounds it, not a time for the whole.
        yield* Effect.raceFirst(putObject(key, sdkBody, contentLength, contentType, false), Deferred.await(failed))
      }).pipe(Effect.scoped)

    const storage: ObjectStorageBackend = {
      put: (key, body, contentType) =>
        Effect.zipRight(checkPut(key, contentType), putObject(key, body, body.length, contentType, true)),
      putStream,
      // Streamed from the file, with putStream's length check (a file may change under its announced size).
      putFile: (key, path, contentLength, contentType) =>
        putStream(
          key,
          fs.stream(path).pipe(
            // The file is ours (a spooled or downloaded result): failing to read it is not the store's fault.
            Stream.mapError((cause) =>
              new StorageError({ message: `S3 PUT of ${key}: ${cause.message}`, fault: "invalid", cause })
            )
          ),
          contentLength,
          contentType
        ),
      head: (key) =>
        Effect.gen(function*() {
          yield* checkKey(key)
          const found = yield* orNone(
            call(
              "HEAD",
              key,
              (abortSignal) => client.send(new HeadObjectCommand({ Bucket: bucket, Key: key }), { abortSignal })
            )
          )
          return Option.map(
            found,
            (out) => ({ size: out.ContentLength ?? 0, contentType: out.ContentType ?? DEFAULT_TYPE })
          )
        }),
      read: (key, range) =>
        Effect.gen(function*() {
          yield* checkKey(key)
          const found = yield* orNone(call("GET", key, (abortSignal) =>
            client.send(
              new GetObjectCommand({
                Bucket: bucket,
                Key: key,
                ...(range === undefined ? {} : { Range: `bytes=${range.start}-${range.end}` })
              }),
              { abortSignal }
            )))
          if (Option.isNone(found)) return Option.none()
          const out = found.value
          const size = range === undefined ? out.ContentLength : totalOf(out.ContentRange)
          const body = out.Body
          if (size === undefined || body === undefined) {
            return yield* new StorageError({
              message: `S3 GET of ${key} answered without a size or a body.`,
              fault: "unavailable"
            })
          }
          return Option.some({
            size,
            contentType: out.ContentType ?? DEFAULT_TYPE,
            body: Stream.fromReadableStream({
              evaluate: () => body.transformToWebStream() as ReadableStream<Uint8Array>,
              onError: (cause) =>
                new StorageError({
                  message: `S3 GET of ${key} broke off: ${describe(cause)}`,
                  fault: "unavailable",
                  cause
                })
            })
          })
        }),
      remove: (key) =>
        Effect.gen(function*() {
          yield* checkKey(key)
          yield* call(
            "DELETE",
            key,
            (abortSignal) => client.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }), { abortSignal })
          )
        }),
      copy: (from, to) =>
        Effect.gen(function*() {
          yield* checkKey(from)
          yield* checkKey(to)
          // Keys are URL-safe characters and `/`, so the source needs no encoding. S3 copies atomically
          // and keeps the content type (MetadataDirective COPY).
          const copied = yield* orNone(
            call(
              "COPY",
              `${from} to ${to}`,
              (abortSignal) =>
                client.send(new CopyObjectCommand({ Bucket: bucket, Key: to, CopySource: `${bucket}/${from}` }), {
                  abortSignal
                })
            )
          )
          return Option.isSome(copied)
        }),
      presignPut: (key, { contentLength, contentType, expiresInS }) =>
        Effect.gen(function*() {
          yield* checkPresignPut(key, { contentType, contentLength, expiresInS })
          const nowMs = yield* Clock.currentTimeMillis
          const url = yield* call("presign PUT", key, () =>
            getSignedUrl(
              client,
              new PutObjectCommand({
                Bucket: bucket,
                Key: key,
                ContentType: contentType,
                ContentLength: contentLength
              }),
              {
                expiresIn: expiresInS,
                signingDate: new Date(nowMs),
                // The presigner leaves Content-Type out of SignedHeaders unless told; with both
                // signed, S3 refuses an upload of another type or length (403 SignatureDoesNotMatch).
                signableHeaders: new Set(["content-type", "content-length"])
              }
            ))
          return { url, headers: { "Content-Type": contentType }, expiresAt: Math.floor(nowMs / 1000) + expiresInS }
        }),
      // A HEAD of an object that need not exist: any answer but a refusal proves the bucket is reachable
      // and takes our credentials (a missing object is 404 given s3:ListBucket, which the gateway's own
      // reads of missing objects need too). HeadBucket is not used: S3-compatible servers answer it unevenly.
      probe: orNone(
        call("HEAD", PROBE_KEY, (abortSignal) =>
          client.send(new HeadObjectCommand({ Bucket: bucket, Key: PROBE_KEY }), { abortSignal }))
      ).pipe(Effect.asVoid),
      presignGet: (key, { expiresInS }) =>
        Effect.gen(function*() {
          yield* checkKey(key)
          yield* checkLifetime(expiresInS)
          const nowMs = yield* Clock.currentTimeMillis
          const url = yield* call(
            "presign GET",
            key,
            () =>
              getSignedUrl(client, new GetObjectCommand({ Bucket: bucket, Key: key }), {
                expiresIn: expiresInS,
                signingDate: new Date(nowMs)
              })
          )
          return { url, expiresAt: Math.floor(nowMs / 1000) + expiresInS }
        })
    }
    return storage
  })
