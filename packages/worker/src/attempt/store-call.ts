import { PostponeError } from '@postpone/core';
import type { ClaimedTask } from '@postpone/core';
import type { Pacing } from '@postpone/wheel';
import type { AttemptEmitter, AttemptOperation } from './events.js';

/** Most tries of a write that got no verdict (the first included), while the lease is held. */
export const STORE_CALL_TRIES = 40;
/**
 * Tries a write gets even after the lease is no longer held (the first included). A late write is
 * still fenced by attempt: it is answered as stale when another attempt holds the task, and it lands
 * when nobody reclaimed the task yet, which spares a rerun. The fault-net case `host_partition`
 * checks that a host cut off mid-lease has its late commits rejected once its link is back.
 */
export const STORE_CALL_MIN_TRIES = 3;
/** Wait before the first retry; doubles per retry up to {@link STORE_RETRY_MAX_MS}. */
export const STORE_RETRY_BASE_MS = 100;
/** Longest wait between two tries. */
export const STORE_RETRY_MAX_MS = 2_000;

export interface StoreCallDeps {
  readonly pacing: Pacing;
  readonly events: AttemptEmitter;
  /**
   * True while the attempt still holds its lease (the lease keeper's word: renewed, and not yet past
   * its estimate). Retries stop once it is false: the lease runs out and reclaim takes the task, so
   * the write is not tried against an attempt another worker may hold. Default: always true (the
   * tries are still bounded by {@link STORE_CALL_TRIES}).
   */
  readonly holdsLease?: () => boolean;
}

/**
 * Runs one fenced store write, and tries it again when the error gives no verdict on it
 * ({@link isRetryableStoreError}): the connection was lost (outcome unknown), could not be made for
 * a reason that passes (nothing was sent), or the database cut the statement short and rolled it
 * back (`StoreError` with `transient`: statement or lock timeout, deadlock, serialization failure),
 * or no pooled connection came free in time (`PoolTimeoutError`, POOL_TIMEOUT: nothing was sent).
 * Up to {@link STORE_CALL_TRIES} tries in all, with backoff from {@link STORE_RETRY_BASE_MS} to
 * {@link STORE_RETRY_MAX_MS}, while `holdsLease()` (the lease keeper renews meanwhile); once the lease
 * is no longer held, {@link STORE_CALL_MIN_TRIES} tries in all.
 * That is safe because every write is fenced by attempt and idempotent in effect: a retried
 * complete of a committed attempt answers DONE again, a retried fail or release of one answers as
 * a stale attempt. Such an error is never the handler's failure. Every failure is emitted as an
 * `error` event; the last one is rethrown.
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
  const holdsLease = deps.holdsLease ?? (() => true);
  for (let tryNo = 1; ; tryNo++) {
    try {
      return await fn();
    } catch (error) {
      deps.events.emit('error', task ? { error, operation, task } : { error, operation });
      const limit = () => (holdsLease() ? STORE_CALL_TRIES : STORE_CALL_MIN_TRIES);
      if (!isRetryableStoreError(error) || !retryable(error) || tryNo >= limit()) throw error;
      await deps.pacing.sleep(Math.min(STORE_RETRY_MAX_MS, STORE_RETRY_BASE_MS * 2 ** (tryNo - 1)));
      if (tryNo >= limit()) throw error;
    }
  }
}

/**
 * True for the store errors a fenced write may be retried after, those that say nothing of whether
 * it ran to a decision: the connection was lost (CONNECTION_LOST), could not be made for a reason
 * that usually passes (CONNECTION_FAILED with `transient: true`: refused, DNS, unreachable, timeout,
 * too many connections), or the database gave no verdict (STORE_ERROR with `transient: true`, e.g.
 * SQLSTATE 57014, 55P03, 40P01, 40001 in the PostgreSQL store: its `NO_VERDICT_SQLSTATES`), or no
 * pooled connection came free in time (POOL_TIMEOUT: nothing was sent).
 */
export function isRetryableStoreError(error: unknown): boolean {
  if (!PostponeError.isInstance(error)) return false;
  if (error.code === 'CONNECTION_LOST' || error.code === 'POOL_TIMEOUT') return true;
  return (error.code === 'CONNECTION_FAILED' || error.code === 'STORE_ERROR') && (error as { transient?: unknown }).transient === true;
}
