/**
 * @postpone/worker — one attempt of one task, as a Postpone worker runs it: the handler (by kind)
 * under a renewed lease, with an abort signal for lease loss, cancel, timeout and shutdown; its end
 * reported to the store fenced by attempt (complete with the handler's writes in the same
 * transaction, batched completes, fail with backoff, release at shutdown), retried under a renewed
 * lease when the database gave no verdict on it (lost connection, statement or lock timeout,
 * deadlock, serialization failure). The store decides every outcome; the attempt only reports what it said.
 */
export { AttemptReporter, type HoldsLease, type WriteFailed } from './attempt-reporter.js';
export { CompletionBatcher, type CompletionBatcherDeps } from './completion-batcher.js';
export { type AbortReason, NonRetryableError, retryIntent, Snooze, type SnoozeUntil, TaskAbortedError } from './errors.js';
export { type ResolvedRetry, type RetryDefaults, resolveRetry, retryDelayFor } from './retry-policy.js';
export type { AttemptEmitter, AttemptEvents, AttemptOperation } from './events.js';
export type { CompletionWrite, Handler, HandlerContext, HandlerMap, PayloadMap } from './handler.js';
export { keepLease, type LeaseEstimate, type LeaseKeeperDeps, type LeaseLossReason } from './lease-keeper.js';
export { LeaseRenewer } from './lease-renewer.js';
export type { AttemptSettings } from './settings.js';
export { callStore, isRetryableStoreError, STORE_CALL_MIN_TRIES, STORE_CALL_TRIES, STORE_RETRY_BASE_MS, STORE_RETRY_MAX_MS, type StoreCallDeps } from './store-call.js';
export { type RunDeps, type RunPhase, TaskRun } from './task-run.js';
