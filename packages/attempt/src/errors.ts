/**
 * Why the worker aborted a handler's signal: a core `PostponeError`. Store and validation errors are
 * core's (`ValidationError`, `StoreClosedError`, ...).
 */
import { PostponeError } from '@postpone/core';

/**
 * Why the worker aborted a handler's `AbortSignal`. The signal's `reason` is a {@link TaskAbortedError}.
 *
 * - `lease-lost`: extend returned false and the task is no longer this attempt's (reclaimed, or taken
 *   by another worker), or the store could not be reached before the lease ran out.
 * - `cancel-requested`: `cancel` was called while the task ran; the completing transaction will end it
 *   CANCELLED with no effect (docs/contract.md#outcomes).
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
