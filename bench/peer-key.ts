import { createHash, timingSafeEqual } from "node:crypto"
import type pg from "pg"

const BEARER = /^Bearer[ \t]+(\S+)[ \t]*$/i
const KEY_SHAPE = /^(sk-|ak_|wk-)[0-9A-Za-z]{20,64}$/

/** An API key's row as the peers use it. */
export interface PeerKey {
  readonly id: string
  readonly account_id: string
  readonly kind: "model" | "resource"
}

/**
 * The hand-written peers' key check (bench/read-peer.ts, bench/create-peer.ts),
 * as Accounts.authenticate does it on a cache miss: the bearer token's shape,
 * its SHA-256, the key looked up by digest joined with its account, and the
 * digest compared again in constant time. Undefined for a missing, malformed,
 * unknown or disabled key; the caller checks the kind.
 */
export const lookUpKey = async (pool: pg.Pool, authorization: string | undefined): Promise<PeerKey | undefined> => {
  const key = BEARER.exec(authorization ?? "")?.[1]
  if (key === undefined || !KEY_SHAPE.test(key)) return undefined
  const hash = createHash("sha256").update(key).digest("hex")
  const { rows } = await pool.query(
    `SELECT k.*, a.group_name AS account_group FROM api_keys k JOIN accounts a ON a.id = k.account_id WHERE k.key_hash = $1`,
    [hash]
  )
  const row = rows[0]
  if (row === undefined || row.disabled_at !== null) return undefined
  return timingSafeEqual(Buffer.from(row.key_hash), Buffer.from(hash)) ? row : undefined
}
