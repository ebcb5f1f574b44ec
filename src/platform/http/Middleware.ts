import { type HttpApi, type HttpApp, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Cause, Clock, Effect, HashMap, Option } from "effect"
import { type Failure, isFailure } from "../Failure.ts"
import { IdPrefix, newId } from "../Ids.ts"
import { Metrics } from "../metrics/Metrics.ts"
import { textProblem } from "../Text.ts"
import { notFoundOfParam } from "./ErrorContract.ts"
import { answerOf, unexpectedError } from "./Errors.ts"
import { HttpFailure, notFound } from "./HttpFailure.ts"
import { CurrentRequestId } from "./RequestId.ts"
import { withSecurityHeaders } from "./SecurityHeaders.ts"

interface Route {
  readonly method: string
  readonly segments: ReadonlyArray<string>
  /** The owning feature's not-found error per path parameter, as the contract declares it (ResourceId). */
  readonly notFound: (param: string) => (() => Failure) | undefined
}

/**
 * Method and path of every endpoint of the contract, to tell 404 from 405.
 * The contract is passed in (src/Gateway.ts), so this module names no feature.
 */
const routesOf = (api: HttpApi.HttpApi.Any): ReadonlyArray<Route> =>
  Object.values((api as HttpApi.HttpApi.AnyWithProps).groups).flatMap((group) =>
    Object.values(group.endpoints).map((endpoint) => ({
      method: endpoint.method,
      segments: endpoint.path.split("/").filter(Boolean),
      notFound: (param: string) =>
        Option.isSome(endpoint.pathSchema) ? notFoundOfParam(endpoint.pathSchema.value, param) : undefined
    }))
  )

/** A route's method and path template, for the HTTP metrics' labels. */
interface Template {
  readonly method: string
  readonly route: string
  readonly segments: ReadonlyArray<string>
  /** Its fixed segments: where two templates match a path, the one with more wins (`/tasks/query` over `/tasks/:id`). */
  readonly fixed: number
}

const templateOf = (method: string, route: string): Template => {
  const segments = route.split("/").filter(Boolean)
  return { method, route, segments, fixed: segments.filter((s) => !s.startsWith(":")).length }
}

/**
 * The template a request's path matched (`/v1/video/tasks/:task_id`), the
 * HTTP metrics' `route` label: never the path itself, which carries ids. A
 * path no route has is `unmatched`.
 */
const routeLabel = (templates: ReadonlyArray<Template>, method: string, segments: ReadonlyArray<string>) => {
  let best: Template | undefined
  for (const t of templates) {
    if (!matches(t, segments)) continue
    const better = best === undefined ||
      (t.method === method && best.method !== method) ||
      ((t.method === method) === (best.method === method) && t.fixed > best.fixed)
    if (better) best = t
  }
  return best?.route ?? "unmatched"
}

const matches = (route: { readonly segments: ReadonlyArray<string> }, segments: ReadonlyArray<string>) =>
  route.segments.length === segments.length &&
  route.segments.every((s, i) => s.startsWith(":") ? segments[i]!.length > 0 : s === segments[i])

const pathOf = (request: HttpServerRequest.HttpServerRequest) => request.url.split("?")[0]!

const decodedSegment = (segment: string): string | undefined => {
  try {
    return decodeURIComponent(segment)
  } catch {
    return undefined // malformed escapes, or UTF-8 of a lone surrogate
  }
}

/** A path segment decoded, or undefined for one that cannot name anything (see impossibleId). */
export const storableSegment = (segment: string): string | undefined => {
  const value = decodedSegment(segment)
  return value === undefined || textProblem(value) !== undefined ? undefined : value
}

/**
 * An id in the path that cannot even be stored (NUL, a lone surrogate, a
 * malformed escape) names nothing: it is not found, answered here for every
 * route before a handler would send it to the database. Other unknown ids,
 * however long, reach their handler and its 404 after authentication.
 */
const impossibleId = (
  routes: ReadonlyArray<Route>,
  request: HttpServerRequest.HttpServerRequest
): Failure | undefined => {
  const segments = pathOf(request).split("/").filter(Boolean)
  for (const route of routes) {
    if (!matches(route, segments)) continue
    for (const [i, name] of route.segments.entries()) {
      if (!name.startsWith(":")) continue
      if (storableSegment(segments[i]!) === undefined) {
        const param = name.slice(1)
        return route.notFound(param)?.() ?? notFound("not_found", `No such ${param.replace(/_id$/, "")}.`)
      }
    }
  }
  return undefined
}

const routeMiss = (routes: ReadonlyArray<Route>, request: HttpServerRequest.HttpServerRequest): HttpFailure => {
  const segments = pathOf(request).split("/").filter(Boolean)
  const allowed = routes.filter((r) => matches(r, segments)).map((r) => r.method)
  if (allowed.length === 0) {
    return notFound("not_found", `No route for ${request.method} ${pathOf(request)}.`)
  }
  const allow = [...new Set(allowed)].sort().join(", ")
  return new HttpFailure({
    status: 405,
    type: "invalid_request_error",
    code: "method_not_allowed",
    message: `${request.method} is not allowed on ${pathOf(request)}; allowed: ${allow}.`,
    headers: { allow }
  })
}

/** The spec's answer to a failure of any feature or of the HTTP layer (the mapping is Errors.ts). */
export const renderError = (error: Parameters<typeof answerOf>[0], requestId: string) => {
  const { body, headers, status } = answerOf(error, requestId)
  return HttpServerResponse.unsafeJson(body, { status, headers })
}

/** A client-chosen request id is kept when it is short and plain; otherwise one is made. */
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/
export const requestIdOf = (incoming: string | undefined) =>
  incoming !== undefined && REQUEST_ID.test(incoming) ? incoming : newId(IdPrefix.request)

/** Seconds between two readings of the clock's nanoseconds. */
export const secondsBetween = (started: bigint, finished: bigint) => Number(finished - started) / 1e9

/** The access log line's own fields, on every path. */
const accessFields = (method: string, path: string, status: number, durationMs: number) => ({
  method,
  path,
  status,
  duration_ms: durationMs
})

/** The access log line of one request, as structured fields. */
export const logRequest = (method: string, path: string, status: number, durationMs: number) =>
  Effect.logInfo("request").pipe(Effect.annotateLogs(accessFields(method, path, status, durationMs)))

/**
 * The access line's annotations as the fiber's path has them when it is
 * written: the request id (set around the whole request), then the line's own.
 */
export const accessAnnotations = (
  requestId: string,
  method: string,
  path: string,
  status: number,
  durationMs: number
): HashMap.HashMap<string, unknown> =>
  HashMap.set(
    HashMap.fromIterable<string, unknown>(Object.entries(accessFields(method, path, status, durationMs))),
    "request_id",
    requestId
  )

/**
 * Outermost layer of every request: assigns the request id, turns every
 * failure that escaped the contract (unknown route, wrong method, errors that
 * carry headers, defects) into the spec's error body, sets `x-request-id`
 * and the hardening headers (SecurityHeaders.ts), writes one structured
 * access log line and records the request in the HTTP metrics, by its
 * route's template (platform/metrics).
 */
export const gatewayMiddleware = (api: HttpApi.HttpApi.Any, plainRoutes: ReadonlyArray<string> = []) => {
  const routes = routesOf(api)
  const labelOf = routeLabeller(api, plainRoutes)
  return (app: HttpApp.Default): HttpApp.Default =>
    Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
      const requestId = requestIdOf(request.headers["x-request-id"])
      return Effect.annotateLogs(handle(routes, labelOf, app, request, requestId), "request_id", requestId)
    })
}

/** The HTTP metrics' `route` label of a request: its route's template among the contract's and `plainRoutes`. */
export const routeLabeller = (api: HttpApi.HttpApi.Any, plainRoutes: ReadonlyArray<string>) => {
  const templates = [
    ...routesOf(api).map((r) => templateOf(r.method, `/${r.segments.join("/")}`)),
    ...plainRoutes.map((r) => templateOf(r.slice(0, r.indexOf(" ")), r.slice(r.indexOf(" ") + 1)))
  ]
  return (method: string, path: string) => routeLabel(templates, method, path.split("/").filter(Boolean))
}

const handle = (
  routes: ReadonlyArray<Route>,
  labelOf: (method: string, path: string) => string,
  app: HttpApp.Default,
  request: HttpServerRequest.HttpServerRequest,
  requestId: string
) =>
  Effect.gen(function*() {
    const started = yield* Clock.currentTimeNanos
    const impossible = impossibleId(routes, request)
    const routed: HttpApp.Default<Failure> = impossible === undefined ? app : Effect.fail(impossible)
    const response = yield* routed.pipe(
      Effect.catchAllCause((cause) => {
        if (Cause.isInterruptedOnly(cause)) return Effect.interrupt
        const error = Cause.squash(cause)
        if (isFailure(error)) return Effect.succeed(renderError(error, requestId))
        if ((error as { _tag?: string })?._tag === "RouteNotFound") {
          return Effect.succeed(renderError(routeMiss(routes, request), requestId))
        }
        return Effect.as(
          Effect.logError("unhandled failure", cause),
          renderError(unexpectedError(error), requestId)
        )
      }),
      Effect.locally(CurrentRequestId, requestId)
    )
    const seconds = secondsBetween(started, yield* Clock.currentTimeNanos)
    const path = pathOf(request)
    const route = labelOf(request.method, path)
    ;(yield* Metrics).httpRequest(request.method, route, response.status, seconds)
    yield* logRequest(request.method, path, response.status, Math.round(seconds * 1000))
    return yield* withSecurityHeaders(
      pathOf(request),
      HttpServerResponse.setHeader(response, "x-request-id", requestId)
    )
  })
