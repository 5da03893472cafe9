/**
 * Why the worker aborted a handler's signal: a core `PostponeError`. Store and validation errors are
 * core's (`ValidationError`, `StoreClosedError`, ...).
 */
import { PostponeError, ValidationError, validateDelayMs, validateRunAt } from '@postpone/core';

/**
 * Why the worker aborted a handler's `AbortSignal`. The signal's `reason` is a {@link TaskAbortedError}.
 *
 * - `lease-lost`: extend returned false and the task is no longer this attempt's (reclaimed, or taken
 *   by another worker), or the store could not be reached before the lease ran out.
 * - `cancel-requested`: `cancel` was called while the task ran; the completing transaction will end it
 *   CANCELLED with no effect (docs/contract.md#outcomes); a handler that throws instead is not failed:
 *   its attempt is released, which ends the task CANCELLED with no failure counted.
 * - `timeout`: the handler ran longer than `handlerTimeoutMs`; the attempt is failed.
 * - `shutdown`: the worker is stopping and hands the attempt back (`store.release`).
 */
export type AbortReason = 'lease-lost' | 'cancel-requested' | 'timeout' | 'shutdown';

const MESSAGES: Readonly<Record<AbortReason, string>> = {
  'lease-lost': 'the lease of this attempt was lost',
  'cancel-requested': 'cancel was requested for this task',
  timeout: 'the handler ran past handlerTimeoutMs',
  shutdown: 'the worker is shutting down and handed the task back',
};

/** The `reason` of an aborted handler signal. `reason` tells the cases apart. */
export class TaskAbortedError extends PostponeError {
  readonly reason: AbortReason;
  constructor(reason: AbortReason, detail?: string) {
    super('TASK_ABORTED', detail ? `${MESSAGES[reason]} (${detail})` : MESSAGES[reason]);
    this.name = 'TaskAbortedError';
    this.reason = reason;
  }
}

/**
 * Thrown by a handler: this failure is final. The attempt is failed with `retryable: false`, so the
 * task goes DEAD now whatever attempts are left (CANCELLED when cancel was requested), fenced by
 * attempt like any fail; `reason` is recorded in `last_error` (docs/contract.md#retry-policy).
 * Recognised by `code` (`NON_RETRYABLE`), so a duplicated copy of this package works too.
 */
export class NonRetryableError extends PostponeError {
  constructor(reason: string, options?: { cause?: unknown }) {
    super('NON_RETRYABLE', reason, options);
    this.name = 'NonRetryableError';
  }
}

/** When a snoozed task is due again: an absolute `dueAt`, or `delayMs` after the store's now (whole ms). */
export type SnoozeUntil = { readonly dueAt: Date; readonly delayMs?: undefined } | { readonly delayMs: number; readonly dueAt?: undefined };

/**
 * Thrown by a handler: "not now, run me again at `dueAt` (or after `delayMs`)". The worker calls the
 * store's fenced `snooze`: the task is SCHEDULED again without counting a failure (CANCELLED when
 * cancel was requested), and a snooze never makes it DEAD (docs/contract.md#retry-policy).
 * Not an error of the task: nothing goes to `last_error`. Recognised by `code` (`SNOOZE`).
 */
export class Snooze extends PostponeError {
  readonly until: SnoozeUntil;
  /**
   * @param until `{ delayMs }` (whole ms, 0..100 years) or `{ dueAt }` (a valid Date, years 1..9999), exactly one
   * @throws ValidationError (INVALID_DELAY, INVALID_RUN_AT) for a bad time: thrown from the handler, it fails the attempt as any error
   */
  constructor(until: SnoozeUntil) {
    const given = (until ?? {}) as { dueAt?: unknown; delayMs?: unknown };
    if ((given.dueAt === undefined) === (given.delayMs === undefined)) throw new ValidationError('INVALID_DELAY', 'delayMs', 'give Snooze dueAt or delayMs, exactly one');
    const checked: SnoozeUntil = given.dueAt !== undefined ? { dueAt: validateRunAt(given.dueAt, 'dueAt') } : { delayMs: validateDelayMs(given.delayMs) };
    super('SNOOZE', checked.dueAt !== undefined ? `snoozed until ${checked.dueAt.toISOString()}` : `snoozed for ${checked.delayMs} ms`);
    this.name = 'Snooze';
    this.until = checked;
  }
}

/** What a handler's thrown value asks for: a final failure, a snooze, or an ordinary (retryable) failure. */
export function retryIntent(error: unknown): { readonly type: 'snooze'; readonly until: SnoozeUntil } | { readonly type: 'fail'; readonly retryable: boolean } {
  if (!PostponeError.isInstance(error)) return { type: 'fail', retryable: true };
  if (error.code === 'SNOOZE') return { type: 'snooze', until: (error as Snooze).until };
  return { type: 'fail', retryable: error.code !== 'NON_RETRYABLE' };
}
