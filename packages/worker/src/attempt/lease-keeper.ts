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
import { type Pacing, raceTimer, settle, startTimer, TIMED_OUT } from '@postpone/wheel';
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
  readonly renewer?: LeaseRenewer | undefined;
}

/** The keeper's estimate of the lease's end, on the monotonic clock (read by the completion batcher). */
export interface LeaseEstimate {
  confirmedUntil: number;
}

/**
 * Renews one attempt's lease until {@link LeaseKeeper.stop} (then silent) or until the lease is gone
 * (then `onLost` is called once with the reason). One timer per attempt, armed for the next renewal:
 * no promise, signal or listener is made while the attempt runs shorter than `renewEveryMs`, which is
 * most attempts (issue 24's worker profile: a third of a worker's CPU per task was this machinery).
 */
export class LeaseKeeper {
  private stopped = false;
  private confirmedUntil: number;
  /** Cancels the armed renewal timer (null while a renewal is in flight, or once stopped). */
  private cancelTimer: (() => void) | null = null;
  /** Stops the in-flight renewal's answer timer at {@link stop}. */
  private inFlight: AbortController | null = null;

  /**
   * Starts keeping the lease: the first renewal is due `renewEveryMs` after `claimSentAt`.
   * @param claimSentAt monotonic time at which the claim that returned `task` was sent (for a task
   *   that waited in the worker's local queue: at which its last renewal there was sent)
   * @param estimate updated with the lease's end as the keeper knows it (monotonic ms)
   * @param onLost called at most once, never after `stop()` returned: the store said the attempt is no
   *   longer held (`lease-lost`, or `cancel-requested` on this very attempt), or no renewal was
   *   answered before the estimate ran out (`lease-lost`). It must not throw.
   */
  constructor(
    private readonly task: ClaimedTask,
    claimSentAt: number,
    private readonly deps: LeaseKeeperDeps,
    private readonly estimate: LeaseEstimate,
    private readonly onLost: (reason: LeaseLossReason) => void,
  ) {
    const grantedMs = Number(task.leaseUntil) - Number(task.claimedAt);
    this.confirmedUntil = claimSentAt + (Number.isFinite(grantedMs) && grantedMs > 0 ? grantedMs : deps.leaseMs);
    estimate.confirmedUntil = this.confirmedUntil;
    this.arm(claimSentAt + deps.renewEveryMs);
  }

  /** Stops renewing: the armed timer is cleared and an in-flight renewal's answer is ignored. Idempotent. */
  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.cancelTimer?.();
    this.cancelTimer = null;
    this.inFlight?.abort();
  }

  private arm(at: number): void {
    this.cancelTimer = startTimer(this.deps.pacing, at - this.deps.pacing.now(), this.fire);
  }

  private readonly fire = (): void => {
    this.cancelTimer = null;
    if (!this.stopped) void this.renew();
  };

  private lost(reason: LeaseLossReason): void {
    if (this.stopped) return;
    this.stopped = true;
    this.onLost(reason);
  }

  /** One renewal; then the next is armed, or the lease is reported lost. */
  private async renew(): Promise<void> {
    const { store, pacing, events, leaseMs, renewEveryMs, renewer } = this.deps;
    const task = this.task;
    const sentAt = pacing.now();
    // Past the estimate already (the claim came back late): the store gets a full lease to answer.
    const answerWithinMs = this.confirmedUntil > sentAt ? this.confirmedUntil - sentAt : leaseMs;
    const inFlight = new AbortController();
    this.inFlight = inFlight;
    const answer = await raceTimer(
      pacing,
      settle(() => (renewer === undefined ? store.extend({ id: task.id, attempt: task.attempt, leaseMs }) : renewer.renew({ id: task.id, attempt: task.attempt }))),
      answerWithinMs,
      inFlight.signal,
    );
    this.inFlight = null;
    if (this.stopped) return;
    if (answer === TIMED_OUT) return this.lost('lease-lost');
    if (answer.ok && answer.value) {
      this.confirmedUntil = sentAt + leaseMs;
      this.estimate.confirmedUntil = this.confirmedUntil;
      events.emit('renewed', { task });
      this.arm(sentAt + renewEveryMs);
      return;
    }
    if (answer.ok) return this.lost(await lossReason(store, task));
    events.emit('error', { error: answer.error, operation: 'extend', task });
    const now = pacing.now();
    if (now >= this.confirmedUntil) return this.lost('lease-lost');
    this.arm(now + Math.max(1, Math.min(renewEveryMs, Math.floor((this.confirmedUntil - now) / 2))));
  }
}

/**
 * {@link LeaseKeeper} as a promise: renews until `stop` aborts (resolves null) or the lease is gone
 * (resolves the reason).
 * @param claimSentAt monotonic time at which the claim that returned `task` was sent
 * @param estimate updated with the lease's end as the keeper knows it (monotonic ms)
 */
export function keepLease(
  task: ClaimedTask,
  claimSentAt: number,
  deps: LeaseKeeperDeps,
  stop: AbortSignal,
  estimate: LeaseEstimate = { confirmedUntil: 0 },
): Promise<LeaseLossReason | null> {
  return new Promise((resolve) => {
    if (stop.aborted) return resolve(null);
    const onStop = () => {
      keeper.stop();
      resolve(null);
    };
    const keeper = new LeaseKeeper(task, claimSentAt, deps, estimate, (reason) => {
      stop.removeEventListener('abort', onStop);
      resolve(reason);
    });
    stop.addEventListener('abort', onStop, { once: true });
  });
}

/** Extend said no: was it a cancel request on this very attempt, or is the attempt gone? One row read. */
async function lossReason(store: Store<unknown>, task: ClaimedTask): Promise<LeaseLossReason> {
  const row = await settle(() => store.getTask(task.id));
  const current = row.ok ? row.value : null;
  return current !== null && current.state === TaskState.CLAIMED && current.attempt === task.attempt && current.cancelRequested
    ? 'cancel-requested'
    : 'lease-lost';
}
