/**
 * Fencing: complete / fail / extend with an attempt that is no longer current change nothing and
 * write no effect (docs/contract.md#promise-3; evidence sigstop_late_commit_rejected).
 */
import { CompleteOutcome, TaskState } from '@postpone/core';
import { describe, expect, it } from 'vitest';
import { claimExactly, LEASE_MS, observe, scheduleAndClaim } from './kit/helpers.js';
import type { HarnessRef } from './kit/harness.js';

export function staleCases(h: HarnessRef): void {
  describe('stale attempts', () => {
    it('after reclaim + re-claim, the old attempt is rejected everywhere and the new one completes', async () => {
      const { store, clock } = h();
      const a = await scheduleAndClaim(store, { maxAttempts: 3 }, 'worker-A');
      clock.tick(LEASE_MS + 1);
      expect(await store.reclaimExpired()).toEqual([{ id: a.id, attempt: 1, outcome: 'SCHEDULED' }]);
      const b = await claimExactly(store, a.id, 'worker-B');
      expect(b.attempt).toBe(2);

      const before = await observe(store, a.id);
      expect(before.task?.state).toBe(TaskState.CLAIMED);
      let workCalls = 0;
      const work = async () => {
        workCalls++;
      };
      expect(await store.complete({ id: a.id, attempt: 1, owner: 'worker-A', result: 'A', work })).toBe(CompleteOutcome.REJECTED_STALE);
      expect(await store.fail({ id: a.id, attempt: 1, error: 'late', backoffMs: 0 })).toEqual({ outcome: 'REJECTED_STALE' });
      expect(await store.extend({ id: a.id, attempt: 1, leaseMs: LEASE_MS })).toBe(false);
      expect(workCalls).toBe(0);
      expect(await observe(store, a.id)).toEqual(before);
      expect(before.completion).toBeNull();

      expect(await store.complete({ id: a.id, attempt: 2, owner: 'worker-B', result: 'B' })).toBe(CompleteOutcome.DONE);
      const done = await observe(store, a.id);
      expect(done.task).toMatchObject({ state: TaskState.DONE, attempt: 2, result: 'B' });
      expect(done.completion).toMatchObject({ taskId: a.id, attempt: 2, worker: 'worker-B' });

      // A late commit after B's DONE is still stale and leaves B's result and completion alone.
      expect(await store.complete({ id: a.id, attempt: 1, owner: 'worker-A', result: 'A', work })).toBe(CompleteOutcome.REJECTED_STALE);
      expect(await store.fail({ id: a.id, attempt: 1, error: 'late', backoffMs: 0 })).toEqual({ outcome: 'REJECTED_STALE' });
      expect(workCalls).toBe(0);
      expect(await observe(store, a.id)).toEqual(done);
    });

    it('after a reclaim and before a re-claim, the old attempt is rejected', async () => {
      const { store, clock } = h();
      const a = await scheduleAndClaim(store, { maxAttempts: 3 }, 'worker-A');
      clock.tick(LEASE_MS + 1);
      await store.reclaimExpired();
      const before = await observe(store, a.id);
      expect(before.task?.state).toBe(TaskState.SCHEDULED);
      expect(await store.complete({ id: a.id, attempt: 1, owner: 'worker-A' })).toBe(CompleteOutcome.REJECTED_STALE);
      expect(await store.fail({ id: a.id, attempt: 1, error: 'late', backoffMs: 0 })).toEqual({ outcome: 'REJECTED_STALE' });
      expect(await store.extend({ id: a.id, attempt: 1, leaseMs: LEASE_MS })).toBe(false);
      expect(await observe(store, a.id)).toEqual(before);
    });

    it('an attempt from the future is rejected too', async () => {
      const { store } = h();
      const a = await scheduleAndClaim(store);
      const before = await observe(store, a.id);
      expect(await store.complete({ id: a.id, attempt: 2, owner: 'w1' })).toBe(CompleteOutcome.REJECTED_STALE);
      expect(await store.fail({ id: a.id, attempt: 2, error: 'x', backoffMs: 0 })).toEqual({ outcome: 'REJECTED_STALE' });
      expect(await store.extend({ id: a.id, attempt: 2, leaseMs: LEASE_MS })).toBe(false);
      expect(await observe(store, a.id)).toEqual(before);
    });

    it('a task that was failed back to SCHEDULED rejects its old attempt', async () => {
      const { store } = h();
      const a = await scheduleAndClaim(store, { maxAttempts: 3 });
      await store.fail({ id: a.id, attempt: 1, error: 'first', backoffMs: 500 });
      const before = await observe(store, a.id);
      expect(await store.complete({ id: a.id, attempt: 1, owner: 'w1' })).toBe(CompleteOutcome.REJECTED_STALE);
      expect(await store.fail({ id: a.id, attempt: 1, error: 'second', backoffMs: 0 })).toEqual({ outcome: 'REJECTED_STALE' });
      expect(await observe(store, a.id)).toEqual(before);
    });
  });
}
