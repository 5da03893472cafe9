import { PostponeError } from '@postpone/core';
import type { ClaimedTask } from '@postpone/core';
import type { Pacing } from '@postpone/wheel';
import type { AttemptEmitter, AttemptOperation } from './events.js';

/** Tries of a write whose connection was lost or could not be made (the first included). */
export const STORE_CALL_TRIES = 3;
/** Wait before the first retry; doubles per retry. */
export const STORE_RETRY_BASE_MS = 100;

export interface StoreCallDeps {
  readonly pacing: Pacing;
  readonly events: AttemptEmitter;
}

/**
 * Runs one store write; on `ConnectionLostError` (outcome unknown) or a transient
 * `ConnectionError` (code CONNECTION_FAILED, e.g. refused while the server restarts: nothing was
 * sent) or a `PoolTimeoutError` (POOL_TIMEOUT, a full pool: nothing was sent) retries it up to {@link STORE_CALL_TRIES} times in all. That is safe because every write is
 * fenced by attempt and idempotent in effect: a retried complete of a committed attempt answers DONE
 * again (core `ConnectionLostError`). Every failure is emitted as an `error` event; the last one is
 * rethrown.
 *
 * @param retryable extra condition for retrying, given the error (e.g. "the handler's own write did not throw")
 */
export async function callStore<T>(
  deps: StoreCallDeps,
  operation: AttemptOperation,
  task: ClaimedTask | undefined,
  fn: () => Promise<T>,
  retryable: (error: unknown) => boolean = () => true,
): Promise<T> {
  for (let tryNo = 1; ; tryNo++) {
    try {
      return await fn();
    } catch (error) {
      deps.events.emit('error', task ? { error, operation, task } : { error, operation });
      if (!isRetryableStoreError(error) || !retryable(error) || tryNo >= STORE_CALL_TRIES) throw error;
      await deps.pacing.sleep(STORE_RETRY_BASE_MS * 2 ** (tryNo - 1));
    }
  }
}

/**
 * True for the store errors a fenced write may be retried after: the connection was lost
 * (CONNECTION_LOST), could not be made for a reason that usually passes (CONNECTION_FAILED with
 * `transient: true`: refused, DNS, unreachable, timeout, too many connections), or no pooled
 * connection came free in time (POOL_TIMEOUT: nothing was sent).
 */
export function isRetryableStoreError(error: unknown): boolean {
  if (!PostponeError.isInstance(error)) return false;
  if (error.code === 'CONNECTION_LOST' || error.code === 'POOL_TIMEOUT') return true;
  return error.code === 'CONNECTION_FAILED' && (error as { transient?: unknown }).transient === true;
}
