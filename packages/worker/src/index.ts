/**
 * @postpone/worker — the worker runtime: claims due tasks, runs handlers by kind under a renewed lease,
 * completes (with the handler's own writes in the same transaction) or fails fenced by attempt,
 * retries with backoff, reclaims expired leases, and shuts down gracefully. Due tasks are found by
 * polling, or by hybrid discovery (a timing wheel of near tasks woken by LISTEN/NOTIFY).
 */
export { createScheduler, type Scheduler, type TypedScheduleInput } from './scheduler.js';
export { createWorker, NO_HANDLER_TIMEOUT_WARNING, SAME_SIGNAL_WINDOW_MS, Worker, type SignalHandlerOptions, type StopOptions, type StopResult, type WorkerState } from './worker.js';
export {
  MAX_CONCURRENCY,
  POOL_RESERVE,
  WORKER_DEFAULTS,
  defaultWorkerId,
  type PruneOptions,
  type ResolvedPruneOptions,
  type ResolvedOptions,
  type WorkerOptions,
} from './options.js';
export { HYBRID_DEFAULTS, type DiscoveryMode, type HybridOptions, type ResolvedHybridOptions } from './discovery/hybrid-options.js';
export type { ClaimCause, ClaimCount, DiscoveryOperation, DiscoveryStats, WheelRebuilt } from './discovery/discovery.js';
export { NonRetryableError, Snooze, type SnoozeUntil, TaskAbortedError, type AbortReason } from './attempt/errors.js';
export type { AttemptEvents, AttemptOperation } from './attempt/events.js';
export type { CompletionWrite, Handler, HandlerContext, HandlerMap, PayloadMap } from './attempt/handler.js';
export {
  TypedEmitter,
  waitForEvent,
  type RebuildReason,
  type StoreOperation,
  type WaitForEventOptions,
  type WorkerEventName,
  type WorkerEvents,
  type WorkerEventSource,
  type WorkerListener,
  type UnclaimedKindReport,
} from './events.js';
export { UNCLAIMED_LOG_REPEAT_PERIODS } from './unclaimed-watch.js';
export { WorkerStoppedError } from './errors.js';
export { ManualPacing, systemPacing, type Pacing } from '@postpone/wheel';
export { ATTRIBUTES, DUE_WAITING_MIN_INTERVAL_MS, INSTRUMENTATION_SCOPE, METRICS, type AttemptOutcome } from './telemetry/telemetry.js';
export { activeTraceContext, traceSchedules, withTraceContext } from './telemetry/trace-context.js';
