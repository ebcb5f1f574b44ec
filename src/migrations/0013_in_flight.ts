/**
 * A channel's tasks in flight (claimed here or waiting upstream), counted at
 * every claim to enforce the channel's `concurrency` across replicas.
 */
export default [
  `CREATE INDEX tasks_in_flight ON tasks (channel) WHERE run_state IN ('running', 'waiting')`
]
