/**
 * Keeps the lease of one attempt alive: extend every `renewEveryMs` on the monotonic clock, long
 * before the lease (measured by the store's clock from the claim) runs out.
 *
 * The local deadline is conservative: a renewal sent at monotonic time `t` extends the lease to the
 * store's `now + leaseMs`, taken after `t`, so the lease lasts at least until `t + leaseMs` (clock
 * rate drift aside). While the store cannot be reached the keeper retries sooner; once that local
 * deadline passes without a confirmed renewal, the lease is presumed lost. Otherwise "lost" is always
 * the store's word (extend returned false), never the worker's guess (docs/contract.md#promise-3).
 */
import { type ClaimedTask, type Store, TaskState } from '@postpone/core';
import type { TypedEmitter } from './events.js';
import type { Pacing } from './pacing.js';
import { raceTimer, settle, TIMED_OUT } from './settle.js';

export type LeaseLossReason = 'lease-lost' | 'cancel-requested';

export interface LeaseKeeperDeps {
  readonly store: Store<unknown>;
  readonly pacing: Pacing;
  readonly events: TypedEmitter;
  readonly leaseMs: number;
  readonly renewEveryMs: number;
}

/**
 * Renews until `stop` aborts (resolves null) or the lease is gone (resolves the reason).
 * @param claimSentAt monotonic time at which the claim was sent
 */
export async function keepLease(task: ClaimedTask, claimSentAt: number, deps: LeaseKeeperDeps, stop: AbortSignal): Promise<LeaseLossReason | null> {
  const { store, pacing, events, leaseMs, renewEveryMs } = deps;
  let confirmedUntil = claimSentAt + leaseMs;
  let nextAt = claimSentAt + renewEveryMs;
  while (!stop.aborted) {
    await pacing.sleep(nextAt - pacing.now(), stop);
    if (stop.aborted) return null;
    const sentAt = pacing.now();
    const answer = await raceTimer(
      pacing,
      settle(() => store.extend({ id: task.id, attempt: task.attempt, leaseMs })),
      confirmedUntil - sentAt,
      stop,
    );
    if (stop.aborted) return null;
    if (answer === TIMED_OUT) return 'lease-lost';
    if (answer.ok && answer.value) {
      confirmedUntil = sentAt + leaseMs;
      nextAt = sentAt + renewEveryMs;
      events.emit('renewed', { task });
      continue;
    }
    if (answer.ok) return await lossReason(store, task);
    events.emit('error', { error: answer.error, operation: 'extend', task });
    const now = pacing.now();
    if (now >= confirmedUntil) return 'lease-lost';
    nextAt = now + Math.max(1, Math.min(renewEveryMs, Math.floor((confirmedUntil - now) / 2)));
  }
  return null;
}

/** Extend said no: was it a cancel request on this very attempt, or is the attempt gone? One row read. */
async function lossReason(store: Store<unknown>, task: ClaimedTask): Promise<LeaseLossReason> {
  const row = await settle(() => store.getTask(task.id));
  const current = row.ok ? row.value : null;
  return current !== null && current.state === TaskState.CLAIMED && current.attempt === task.attempt && current.cancelRequested
    ? 'cancel-requested'
    : 'lease-lost';
}
