import { PostponeError } from '@postpone/core';
import type { ClaimedTask } from '@postpone/core';
import type { StoreOperation, TypedEmitter } from './events.js';
import type { Pacing } from './pacing.js';

/** Tries of a write whose connection was lost (the first included). */
export const STORE_CALL_TRIES = 3;
/** Wait before the first retry; doubles per retry. */
export const STORE_RETRY_BASE_MS = 100;

export interface StoreCallDeps {
  readonly pacing: Pacing;
  readonly events: TypedEmitter;
}

/**
 * Runs one store write; on `ConnectionLostError` (outcome unknown) retries it up to
 * {@link STORE_CALL_TRIES} times in all. That is safe because every write is fenced by attempt and
 * idempotent in effect: a retried complete of a committed attempt answers DONE again (core
 * `ConnectionLostError`). Every failure is emitted as an `error` event; the last one is rethrown.
 *
 * @param retryable extra condition for retrying (e.g. "the handler's own write did not throw")
 */
export async function callStore<T>(
  deps: StoreCallDeps,
  operation: StoreOperation,
  task: ClaimedTask | undefined,
  fn: () => Promise<T>,
  retryable: () => boolean = () => true,
): Promise<T> {
  for (let tryNo = 1; ; tryNo++) {
    try {
      return await fn();
    } catch (error) {
      deps.events.emit('error', task ? { error, operation, task } : { error, operation });
      const lost = PostponeError.isInstance(error) && error.code === 'CONNECTION_LOST';
      if (!lost || !retryable() || tryNo >= STORE_CALL_TRIES) throw error;
      await deps.pacing.sleep(STORE_RETRY_BASE_MS * 2 ** (tryNo - 1));
    }
  }
}
