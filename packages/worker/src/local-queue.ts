/**
 * The worker's local queue (option `prefetch`): tasks claimed ahead of free slots, held in claim
 * order until a slot frees, so one claim serves many tasks (docs/contract.md#local-queue).
 *
 * Exactness: a queued task is CLAIMED in the store and its attempt already counted by the claim, so
 * its lease must hold while it waits. The queue renews the leases of everything it holds in ONE
 * `extendMany` (through the worker's {@link LeaseRenewer}) every `renewEveryMs` of the monotonic
 * clock. Its estimate of each lease's end is conservative, dated like the lease keeper's
 * (`@postpone/worker` `keepLease`): a lease granted by a claim or renewal sent at `t` lasts at least
 * until `t + leaseMs` on the store's clock. A task is handed to a slot only while at least half of
 * `leaseMs − renewEveryMs` of that estimate is left, and the slot's keeper takes over from the last
 * renewal; a task the store did not renew (stale, cancel requested, expired) or whose estimate ran out
 * while the store was unreachable is never run: it is given to `onDropped` (the worker hands it back
 * with a fenced `release`). `drain()` empties the queue at shutdown.
 */
import type { ClaimedTask } from '@postpone/core';
import type { LeaseRenewer } from './attempt/lease-renewer.js';
import { type Pacing, raceTimer, settle, TIMED_OUT } from '@postpone/wheel';

/** A queued task and its lease as the queue knows it. */
export interface QueuedTask {
  readonly task: ClaimedTask;
  /** Monotonic time at which the claim or the last renewal that granted the lease was sent. */
  confirmedAt: number;
}

export interface LocalQueueDeps {
  readonly renewer: LeaseRenewer;
  readonly pacing: Pacing;
  readonly leaseMs: number;
  readonly renewEveryMs: number;
  /** A task left the queue without running: not renewed, lease estimate run out, or cancel requested. */
  readonly onDropped: (task: ClaimedTask, reason: 'lease-lost' | 'cancel-requested') => void;
  /** A renewal failed (the store's error); the leases are tried again, the estimate decides. */
  readonly onError: (error: unknown) => void;
}

export class LocalQueue {
  private items: QueuedTask[] = [];
  private head = 0;
  private keeping = false;
  private readonly stop = new AbortController();

  constructor(private readonly deps: LocalQueueDeps) {}

  get size(): number {
    return this.items.length - this.head;
  }

  /** Queues tasks of one claim sent at monotonic `claimSentAt`. */
  push(tasks: readonly ClaimedTask[], claimSentAt: number): void {
    for (const task of tasks) this.items.push({ task, confirmedAt: this.grantedAt(task, claimSentAt) });
    if (!this.keeping && this.size > 0 && !this.stop.signal.aborted) {
      this.keeping = true;
      void this.keep().finally(() => {
        this.keeping = false;
      });
    }
  }

  /**
   * The next task whose lease estimate leaves it enough time, with the time its lease was last
   * granted (the slot's lease keeper starts from there); tasks past that are dropped on the way.
   * @returns null when the queue is empty
   */
  take(): QueuedTask | null {
    const now = this.deps.pacing.now();
    const minLeftMs = (this.deps.leaseMs - this.deps.renewEveryMs) / 2;
    while (this.size > 0) {
      const next = this.items[this.head] as QueuedTask;
      this.head += 1;
      this.compact();
      if (next.confirmedAt + this.deps.leaseMs - now > minLeftMs) return next;
      this.deps.onDropped(next.task, 'lease-lost');
    }
    return null;
  }

  /** Removes the task (a cancel was requested for it) and hands it to `onDropped`. @returns whether it was queued */
  remove(id: string): boolean {
    const at = this.items.findIndex((q, i) => i >= this.head && q.task.id === id);
    if (at < 0) return false;
    const [gone] = this.items.splice(at, 1);
    this.deps.onDropped((gone as QueuedTask).task, 'cancel-requested');
    return true;
  }

  /** Shutdown: stops renewing and returns every queued task (the worker hands them back at once). */
  drain(): ClaimedTask[] {
    this.stop.abort();
    const tasks = this.items.slice(this.head).map((q) => q.task);
    this.items = [];
    this.head = 0;
    return tasks;
  }

  /** A lease granted by a claim sent at `sentAt` lasts at least `leaseUntil − claimedAt` from then (the keeper's rule). */
  private grantedAt(task: ClaimedTask, sentAt: number): number {
    const grantedMs = Number(task.leaseUntil) - Number(task.claimedAt);
    return Number.isFinite(grantedMs) && grantedMs > 0 ? sentAt + grantedMs - this.deps.leaseMs : sentAt;
  }

  private compact(): void {
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
  }

  /** Renews everything queued, one statement per round, until the queue is empty or drained. */
  private async keep(): Promise<void> {
    const { pacing, renewer, leaseMs, renewEveryMs } = this.deps;
    const stop = this.stop.signal;
    /** After a failed renewal: when to try again (sooner than the period). */
    let retryAt: number | null = null;
    while (this.size > 0 && !stop.aborted) {
      let oldest = Number.POSITIVE_INFINITY;
      for (let i = this.head; i < this.items.length; i++) oldest = Math.min(oldest, (this.items[i] as QueuedTask).confirmedAt);
      await pacing.sleep((retryAt ?? oldest + renewEveryMs) - pacing.now(), stop);
      retryAt = null;
      if (stop.aborted) return;
      const batch = this.items.slice(this.head);
      if (batch.length === 0) return;
      const sentAt = pacing.now();
      // Answer within what the oldest lease has left (at least one ms); later answers count as failures.
      const waitMs = Math.max(1, Math.min(...batch.map((q) => q.confirmedAt)) + leaseMs - sentAt);
      const answers = await raceTimer(pacing, settle(() => Promise.all(batch.map((q) => renewer.renew({ id: q.task.id, attempt: q.task.attempt })))), waitMs, stop);
      if (stop.aborted) return;
      if (answers !== TIMED_OUT && answers.ok) {
        const lost = new Set<QueuedTask>();
        for (const [i, q] of batch.entries()) {
          if (answers.value[i]) q.confirmedAt = sentAt;
          else lost.add(q);
        }
        if (lost.size > 0) this.dropWhere((q) => lost.has(q));
        continue;
      }
      if (answers !== TIMED_OUT) this.deps.onError(answers.error);
      // Unreachable: drop what has run out, try the rest again soon (half of what the oldest has left).
      const now = pacing.now();
      this.dropWhere((q) => q.confirmedAt + leaseMs <= now);
      const left = this.items.slice(this.head).reduce((min, q) => Math.min(min, q.confirmedAt + leaseMs - now), Number.POSITIVE_INFINITY);
      if (Number.isFinite(left)) retryAt = now + Math.max(1, Math.min(renewEveryMs, Math.floor(left / 2)));
    }
  }

  private dropWhere(gone: (q: QueuedTask) => boolean): void {
    const kept: QueuedTask[] = [];
    for (let i = this.head; i < this.items.length; i++) {
      const q = this.items[i] as QueuedTask;
      if (gone(q)) this.deps.onDropped(q.task, 'lease-lost');
      else kept.push(q);
    }
    this.items = kept;
    this.head = 0;
  }
}
