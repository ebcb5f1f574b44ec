import { HttpApiBuilder } from "@effect/platform"
import { Effect, Layer, Option } from "effect"
import { GatewayApi } from "../api/Api.ts"
import * as Errors from "../api/Errors.ts"
import { CurrentPrincipal } from "../api/Security.ts"
import { Assets } from "../services/Assets.ts"
import { ResourceKeyAuthLive } from "./Auth.ts"
import { serveObject } from "./ServeObject.ts"

const assetNotFound = (id: string) => () => Errors.notFound("asset_not_found", `No asset ${id} under this account.`)

export const AssetsLive = HttpApiBuilder.group(GatewayApi, "assets", (handlers) =>
  handlers.handle("getAssetContent", ({ path }) =>
    Effect.gen(function*() {
      const principal = yield* CurrentPrincipal
      const asset = yield* (yield* Assets).find(principal.accountId, path.asset_id)
      if (Option.isNone(asset)) return yield* assetNotFound(path.asset_id)()
      return yield* serveObject(asset.value.storageKey, {
        notFound: assetNotFound(path.asset_id),
        headers: { "content-disposition": `attachment; filename="${asset.value.filename}"` }
      })
    }))).pipe(Layer.provide(ResourceKeyAuthLive))
