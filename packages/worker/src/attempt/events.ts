/**
 * What an attempt reports while it runs and ends: the events it emits (the worker's `WorkerEvents`
 * includes them), through the worker's emitter.
 */
import type { ClaimedTask, CompleteOutcome, FailResult, Json, ReleaseOutcome, SnoozeResult } from '@postpone/core';
import type { AbortReason } from './errors.js';

/** The store calls of an attempt. */
export type AttemptOperation = 'extend' | 'complete' | 'fail' | 'release' | 'snooze';

export interface AttemptEvents {
  /** The lease of `task.attempt` was renewed for another `leaseMs`. */
  renewed: { readonly task: ClaimedTask };
  /** Extend was refused (or the store unreachable until the lease ran out); the handler's signal was aborted with `reason`. */
  leaseLost: { readonly task: ClaimedTask; readonly reason: Extract<AbortReason, 'lease-lost' | 'cancel-requested'> };
  /**
   * The fenced complete answered; `outcome` is the store's word (DONE, CANCELLED_BEFORE_COMMIT, REJECTED_STALE,
   * or NOT_FOUND — only with DONE not kept: the task was already finished without history, by this attempt
   * after a lost reply or by another one; it is finished, not failed).
   */
  completed: { readonly task: ClaimedTask; readonly outcome: CompleteOutcome; readonly result: Json; readonly durationMs: number };
  /**
   * The attempt failed and the fenced fail answered: `result` is the next state (or REJECTED_STALE); `error` the text recorded in `last_error`;
   * `retryable` false when the handler threw `NonRetryableError`; `delayMs` the retry delay sent (after jitter).
   */
  failed: { readonly task: ClaimedTask; readonly error: string; readonly result: FailResult; readonly retryable: boolean; readonly delayMs: number };
  /** The store refused a late write of this attempt (complete, fail or release): someone else holds the task now, or it ended. */
  rejectedStale: { readonly task: ClaimedTask; readonly operation: 'complete' | 'fail' | 'release' | 'snooze' };
  /**
   * The store refused a progress write of this attempt (`ctx.progress`): the attempt is no longer the
   * current one (its lease expired and another claim took the task, or the task ended). Later reports
   * of the attempt are dropped (docs/contract.md#progress).
   */
  progressRefused: { readonly task: ClaimedTask };
  /** The handler threw `Snooze` and the fenced snooze answered: `result` is the next state (no failure counted). */
  snoozed: { readonly task: ClaimedTask; readonly result: SnoozeResult };
  /** The attempt was handed back at shutdown (`store.release`). */
  released: { readonly task: ClaimedTask; readonly outcome: ReleaseOutcome };
  /** The handler did not settle within `abandonGraceMs` after its signal aborted; its slot was freed and its writes dropped. */
  abandoned: { readonly task: ClaimedTask; readonly reason: AbortReason };
  /** A store call of the attempt failed (a batch of completes names no task). */
  error: { readonly error: unknown; readonly operation: AttemptOperation; readonly task?: ClaimedTask };
}

/** Where an attempt's events go (the worker's emitter). */
export interface AttemptEmitter {
  emit<E extends keyof AttemptEvents>(event: E, payload: AttemptEvents[E]): void;
}
