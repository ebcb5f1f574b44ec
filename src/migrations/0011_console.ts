/**
 * The web console (src/console/).
 *
 * - `console_sessions`: a signed-in browser. Only the SHA-256 of the session
 *   token is stored (the cookie holds the token), so a copy of the database
 *   opens no session; the CSRF token is stored the same way. `account_id` is
 *   the account shown: the key's own for an account owner, the one an
 *   operator switched to (null until then). `key_id` names the `ak_` key the
 *   owner signed in with, so disabling that key ends its sessions at once.
 * - `webhook_events.resent_from`: the number of attempts an event had when it
 *   was last sent again by hand from the console. The delivery worker counts
 *   interrupted attempts from there, so a re-sent event gets a full new round
 *   of attempts while the earlier attempts stay in its history.
 */
export default [
  `CREATE TABLE console_sessions (
    token_hash text PRIMARY KEY,
    role text NOT NULL CHECK (role IN ('account', 'operator')),
    account_id text REFERENCES accounts (id),
    key_id text REFERENCES api_keys (id),
    created_at bigint NOT NULL,
    expires_at bigint NOT NULL
  )`,
  `CREATE INDEX console_sessions_expiry ON console_sessions (expires_at)`,
  `ALTER TABLE webhook_events ADD COLUMN resent_from integer NOT NULL DEFAULT 0`
]
