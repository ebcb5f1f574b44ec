/**
 * Accounts, their API keys and the credit ledger. Credits are integer
 * micro-credits (1 credit = 1_000_000) so sums are exact.
 */
export default [
  `CREATE TABLE accounts (
    id text PRIMARY KEY,
    name text NOT NULL,
    group_name text NOT NULL,
    wallet_micros bigint NOT NULL DEFAULT 0,
    subscription_micros bigint NOT NULL DEFAULT 0,
    webhook_url text,
    webhook_enabled boolean NOT NULL DEFAULT false,
    webhook_key_enc text,
    webhook_key_hash text UNIQUE,
    webhook_key_version integer NOT NULL DEFAULT 0,
    created_at bigint NOT NULL,
    updated_at bigint NOT NULL
  )`,
  `CREATE TABLE api_keys (
    id text PRIMARY KEY,
    account_id text NOT NULL REFERENCES accounts (id),
    kind text NOT NULL CHECK (kind IN ('model', 'resource')),
    key_hash text NOT NULL UNIQUE,
    key_hint text NOT NULL,
    group_name text,
    disabled_at bigint,
    created_at bigint NOT NULL
  )`,
  `CREATE INDEX api_keys_account ON api_keys (account_id)`,
  `CREATE TABLE ledger (
    id text PRIMARY KEY,
    account_id text NOT NULL REFERENCES accounts (id),
    task_id text,
    kind text NOT NULL CHECK (kind IN ('credit', 'charge', 'refund')),
    wallet_micros bigint NOT NULL DEFAULT 0,
    subscription_micros bigint NOT NULL DEFAULT 0,
    note text,
    created_at bigint NOT NULL
  )`,
  `CREATE INDEX ledger_account ON ledger (account_id, created_at)`,
  `CREATE TABLE webhook_events (
    id text PRIMARY KEY,
    account_id text NOT NULL REFERENCES accounts (id),
    type text NOT NULL,
    payload jsonb NOT NULL,
    status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
    attempts integer NOT NULL DEFAULT 0,
    next_attempt_at bigint NOT NULL,
    created_at bigint NOT NULL
  )`,
  `CREATE INDEX webhook_events_due ON webhook_events (next_attempt_at) WHERE status = 'pending'`
]
