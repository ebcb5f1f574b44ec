/**
 * Video and image tasks. The row is also the queue item of the task engine
 * (docs/engine.md); the engine's columns arrive with the engine.
 */
export default [
  `CREATE TABLE tasks (
    id text PRIMARY KEY,
    account_id text NOT NULL REFERENCES accounts (id),
    kind text NOT NULL CHECK (kind IN ('video', 'image')),
    model text NOT NULL,
    operation text NOT NULL,
    status text NOT NULL CHECK (status IN ('queued', 'in_progress', 'succeeded', 'failed')),
    progress integer NOT NULL DEFAULT 0,
    request jsonb NOT NULL,
    result jsonb,
    error jsonb,
    usage jsonb,
    client_reference_id text,
    metadata jsonb,
    created_at bigint NOT NULL,
    started_at bigint,
    completed_at bigint,
    updated_at bigint NOT NULL
  )`,
  `CREATE INDEX tasks_account_kind_created ON tasks (account_id, kind, created_at DESC, id DESC)`
]
