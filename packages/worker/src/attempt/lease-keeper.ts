/**
 * Keeps the lease of one attempt alive: extend every `renewEveryMs` on the monotonic clock, long
 * before the lease (measured by the store's clock from the claim) runs out.
 *
 * The local estimate of the lease's end is conservative and dated by the store's answer: the claim
 * sent at monotonic time `t` returned the database's own deadline `leaseUntil`, set after the
 * database read `claimedAt`, which it read after `t`; so the lease lasts at least until
 * `t + (leaseUntil − claimedAt)` (clock rate drift aside). A renewal sent at `t` likewise lasts until
 * `t + leaseMs`. The estimate only paces renewals and bounds the wait while the store is unreachable;
 * it never ends an attempt by itself: when it says the lease is gone (a claim that waited in the
 * driver longer than the lease), the keeper asks the store at once with an extend, and the store's
 * word decides (docs/contract.md#promise-3). The attempt is given up only when extend returns false, or when the
 * store could not be reached (an error, or no answer) before the estimate ran out.
 */
import { type ClaimedTask, type Store, TaskState } from '@postpone/core';
import { type Pacing, raceTimer, settle, TIMED_OUT } from '@postpone/wheel';
import type { AttemptEmitter } from './events.js';
import type { LeaseRenewer } from './lease-renewer.js';

export type LeaseLossReason = 'lease-lost' | 'cancel-requested';

export interface LeaseKeeperDeps {
  readonly store: Store<unknown>;
  readonly pacing: Pacing;
  readonly events: AttemptEmitter;
  readonly leaseMs: number;
  readonly renewEveryMs: number;
  /** Batches the renewals of the worker's leases into one `extendMany` (default: one `extend` per renewal). */
  readonly renewer?: LeaseRenewer;
}

/** The keeper's estimate of the lease's end, on the monotonic clock (read by the completion batcher). */
export interface LeaseEstimate {
  confirmedUntil: number;
}

/**
 * Renews until `stop` aborts (resolves null) or the lease is gone (resolves the reason).
 * @param claimSentAt monotonic time at which the claim that returned `task` was sent (for a task
 *   that waited in the worker's local queue: at which its last renewal there was sent)
 * @param estimate updated with the lease's end as the keeper knows it (monotonic ms)
 */
export async function keepLease(
  task: ClaimedTask,
  claimSentAt: number,
  deps: LeaseKeeperDeps,
  stop: AbortSignal,
  estimate: LeaseEstimate = { confirmedUntil: 0 },
): Promise<LeaseLossReason | null> {
  const { store, pacing, events, leaseMs, renewEveryMs, renewer } = deps;
  const grantedMs = Number(task.leaseUntil) - Number(task.claimedAt);
  let confirmedUntil = claimSentAt + (Number.isFinite(grantedMs) && grantedMs > 0 ? grantedMs : leaseMs);
  estimate.confirmedUntil = confirmedUntil;
  let nextAt = claimSentAt + renewEveryMs;
  while (!stop.aborted) {
    await pacing.sleep(nextAt - pacing.now(), stop);
    if (stop.aborted) return null;
    const sentAt = pacing.now();
    // Past the estimate already (the claim came back late): the store gets a full lease to answer.
    const answerWithinMs = confirmedUntil > sentAt ? confirmedUntil - sentAt : leaseMs;
    const answer = await raceTimer(
      pacing,
      settle(() => (renewer === undefined ? store.extend({ id: task.id, attempt: task.attempt, leaseMs }) : renewer.renew({ id: task.id, attempt: task.attempt }))),
      answerWithinMs,
      stop,
    );
    if (stop.aborted) return null;
    if (answer === TIMED_OUT) return 'lease-lost';
    if (answer.ok && answer.value) {
      confirmedUntil = sentAt + leaseMs;
      estimate.confirmedUntil = confirmedUntil;
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
