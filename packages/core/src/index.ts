/**
 * @postpone/core — the pure heart of Postpone: states, outcomes, the transition function, the Store
 * contract, typed errors, Clock, backoff and input validation. No I/O. The typed errors and
 * `describeThrown` live in `@postpone/core` and are re-exported here.
 *
 * Terminology:
 * - task: one unit of delayed work (`kind` + JSON `payload`), due at `dueAt`.
 * - claim: a worker atomically takes a due task; it gets a lease and a new `attempt`.
 * - lease: the time (store clock) until which the claim is exclusive; renewed by extend.
 * - attempt: the claim counter, used as the fencing token of complete, fail and extend.
 * - failures: the attempts used up — each fail and each expired lease; a hand-back (release) is not one.
 * - reclaim: moving a task whose lease expired back to SCHEDULED (or DEAD / CANCELLED).
 * - release (hand-back): the holder gives its attempt back at shutdown; the task is due again at once.
 * - backoff: the delay after failure n, `baseMs × 2^(n−1)`, capped.
 * - dead: a task whose failures reached `maxAttempts`.
 * - idempotency key: `task-<id>`, handed to external services so retries apply once.
 */
export * from './states.js';
export * from './task.js';
export * from './errors/index.js';
export * from './backoff.js';
export * from './clock.js';
export * from './input/index.js';
export * from './transition.js';
export * from './store.js';
export * from './admin.js';
export * from './bulk.js';
export * from './unclaimed.js';
export * from './pause.js';
export * from './params.js';
export * from './complete-many.js';
export * from './extend-many.js';
export * from './override-store.js';
export * from './cron-store.js';
export * from './key-limit.js';
export * from './key-backlog.js';
export * from './key-rate-limit.js';
export * from './rate-limit.js';
export * from './progress-wait.js';
export * from './dependencies.js';
export * from './batch.js';
