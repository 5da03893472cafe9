/**
 * @postpone/core — the pure heart of Postpone: states, outcomes, the transition function, the Store
 * contract, typed errors, Clock, backoff and input validation. No I/O, no dependencies.
 *
 * Terminology:
 * - task: one unit of delayed work (`kind` + JSON `payload`), due at `dueAt`.
 * - claim: a worker atomically takes a due task; it gets a lease and a new `attempt`.
 * - lease: the time (store clock) until which the claim is exclusive; renewed by extend.
 * - attempt: the claim counter, used as the fencing token of complete, fail and extend.
 * - reclaim: moving a task whose lease expired back to SCHEDULED (or DEAD / CANCELLED).
 * - backoff: the delay before the next attempt, `baseMs × 2^(attempt−1)`, capped.
 * - dead: a task out of attempts.
 * - idempotency key: `task-<id>`, handed to external services so retries apply once.
 */
export * from './states.js';
export * from './json.js';
export * from './task.js';
export * from './errors.js';
export * from './backoff.js';
export * from './clock.js';
export * from './validate.js';
export * from './transition.js';
export * from './store.js';
export * from './admin.js';
export * from './params.js';
export * from './complete-many.js';
export * from './override-store.js';
