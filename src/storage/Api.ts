import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { errors, httpFailures, ResourceId } from "../platform/http/ErrorContract.ts"
import { IncompleteBody, InvalidSignature, ObjectNotFound, StorageUnavailable, UrlExpired } from "./Errors.ts"

const objectPath = Schema.Struct({ key: ResourceId(() => new ObjectNotFound({ message: "No such key." })) })

/** The URL's credential: expired, or not for this request. 404 when objects live in S3 and this store serves nothing. */
const SignedUrlErrors = Schema.Union(errors(UrlExpired, InvalidSignature), httpFailures(404))
/** The store's disk full, or failing: 503 with `Retry-After`; nothing partial is ever stored or served. */
const StorageErrors = errors(StorageUnavailable)

/**
 * The local object store's pre-signed URLs (only when S3 is not configured).
 * No bearer key: the `X-Expires` and `X-Signature` query parameters are the
 * credential, checked by the handlers. The object key is one path segment
 * with `~` for `/` (a path parameter cannot hold `/`). Being part of the
 * contract, these paths get the gateway's error body, request id, and the
 * middleware's 404/405 from the route table. HEAD is served by the GET route.
 */
export class StorageApi extends HttpApiGroup.make("storage")
  .add(
    HttpApiEndpoint.put("putObject", "/storage/:key").setPath(objectPath)
      .addSuccess(HttpApiSchema.Empty(200))
      .addError(SignedUrlErrors).addError(errors(IncompleteBody)).addError(StorageErrors)
      .annotate(
        OpenApi.Description,
        "Upload through a pre-signed PUT URL: send exactly the signed Content-Type and length."
      )
  )
  .add(
    HttpApiEndpoint.get("getObject", "/storage/:key").setPath(objectPath)
      .addSuccess(HttpApiSchema.Uint8Array())
      .addError(SignedUrlErrors).addError(errors(ObjectNotFound)).addError(httpFailures(416)).addError(StorageErrors)
      .annotate(OpenApi.Description, "Download through a pre-signed GET URL; single byte ranges are honoured.")
  )
  .annotate(OpenApi.Title, "Local object storage")
{}
