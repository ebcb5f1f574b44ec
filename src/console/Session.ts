/** Who a console session belongs to. */
export interface Session {
  /** The cookie's token, in memory only: the CSRF token is derived from it. */
  readonly token: string
  readonly tokenHash: string
  readonly role: "account" | "operator"
  /** The account shown: the owner's own, or the one an operator switched to (null until then). */
  readonly accountId: string | null
  readonly expiresAt: number
}

/** A session that shows an account: the owner's, or the one the operator chose. */
export interface Viewer {
  readonly session: Session
  readonly accountId: string
}
