/**
 * Leases: extend (renew) by the holder of the current attempt, and reclaim of expired leases
 * (docs/contract.md#transitions, reclaim: CLAIMED → SCHEDULED / DEAD / CANCELLED on lease expiry; evidence crash_kill9_lease_retry).
 */
import { CancelOutcome, LEASE_EXPIRED_ERROR, TaskState } from '@postpone/core';
import { describe, expect, it } from 'vitest';
import { claimExactly, LEASE_MS, mustGetTask, scheduleAndClaim } from './kit/helpers.js';
import type { HarnessRef } from './kit/harness.js';

export function leaseCases(h: HarnessRef): void {
  describe('extend', () => {
    it('renews the lease of the current attempt to store now + leaseMs', async () => {
      const { store, clock } = h();
      const c = await scheduleAndClaim(store);
      const claimed = await mustGetTask(store, c.id);
      clock.tick(900);
      expect(await store.extend({ id: c.id, attempt: c.attempt, leaseMs: 5_000 })).toBe(true);
      const task = await mustGetTask(store, c.id);
      // Only the lease changes: `updatedAt` stays the claim's, so a renewal writes no indexed column (HOT; docs/contract.md#vacuum).
      expect(task).toEqual({ ...claimed, leaseUntil: new Date(clock.now() + 5_000) });
      clock.tick(4_000);
      expect(await store.reclaimExpired()).toEqual([]);
      expect((await mustGetTask(store, c.id)).state).toBe(TaskState.CLAIMED);
    });

    it('returns false once the lease has expired, even before a reclaim', async () => {
      const { store, clock } = h();
      const c = await scheduleAndClaim(store);
      clock.tick(LEASE_MS + 1);
      const before = await mustGetTask(store, c.id);
      expect(await store.extend({ id: c.id, attempt: c.attempt, leaseMs: LEASE_MS })).toBe(false);
      expect(await mustGetTask(store, c.id)).toEqual(before);
    });

    it('returns false once cancel was requested', async () => {
      const { store } = h();
      const c = await scheduleAndClaim(store);
      expect(await store.cancel(c.id)).toBe(CancelOutcome.REQUESTED);
      const before = await mustGetTask(store, c.id);
      expect(await store.extend({ id: c.id, attempt: c.attempt, leaseMs: LEASE_MS })).toBe(false);
      expect(await mustGetTask(store, c.id)).toEqual(before);
    });

    it('returns false for a task that does not exist or is not claimed', async () => {
      const { store } = h();
      const { id } = await store.schedule({ kind: 'k', delayMs: 1_000 });
      expect(await store.extend({ id, attempt: 1, leaseMs: LEASE_MS })).toBe(false);
      expect(await store.extend({ id: '987654321', attempt: 1, leaseMs: LEASE_MS })).toBe(false);
    });
  });

  describe('reclaimExpired', () => {
    it('an expired lease with attempts left goes back to SCHEDULED, once, and is claimable again', async () => {
      const { store, clock } = h();
      const c = await scheduleAndClaim(store, { maxAttempts: 2 });
      clock.tick(LEASE_MS - 1);
      expect(await store.reclaimExpired()).toEqual([]);
      expect((await mustGetTask(store, c.id)).state).toBe(TaskState.CLAIMED);
      clock.tick(2);
      expect(await store.reclaimExpired()).toEqual([{ id: c.id, attempt: 1, outcome: 'SCHEDULED' }]);
      expect(await mustGetTask(store, c.id)).toMatchObject({
        state: TaskState.SCHEDULED,
        attempt: 1,
        failures: 1,
        leaseOwner: null,
        leaseUntil: null,
        lastError: LEASE_EXPIRED_ERROR,
        dueAt: c.dueAt,
      });
      expect(await store.reclaimExpired()).toEqual([]);
      const again = await claimExactly(store, c.id, 'w2');
      expect(again).toMatchObject({ attempt: 2, failures: 1 });
      expect(await store.getCompletion(c.id)).toBeNull();
    });

    it('an expired lease with attempts exhausted goes to DEAD', async () => {
      const { store, clock } = h();
      const c = await scheduleAndClaim(store, { maxAttempts: 1 });
      clock.tick(LEASE_MS + 1);
      expect(await store.reclaimExpired()).toEqual([{ id: c.id, attempt: 1, outcome: 'DEAD' }]);
      expect(await mustGetTask(store, c.id)).toMatchObject({ state: TaskState.DEAD, failures: 1, leaseOwner: null, leaseUntil: null, lastError: LEASE_EXPIRED_ERROR });
      expect(await store.claim({ owner: 'w1', limit: 10, leaseMs: LEASE_MS })).toEqual([]);
    });

    it('an expired lease of a cancel-requested task goes to CANCELLED', async () => {
      const { store, clock } = h();
      const c = await scheduleAndClaim(store, { maxAttempts: 5 });
      expect(await store.cancel(c.id)).toBe(CancelOutcome.REQUESTED);
      clock.tick(LEASE_MS + 1);
      expect(await store.reclaimExpired()).toEqual([{ id: c.id, attempt: 1, outcome: 'CANCELLED' }]);
      expect(await mustGetTask(store, c.id)).toMatchObject({ state: TaskState.CANCELLED, leaseOwner: null, leaseUntil: null });
      expect(await store.getCompletion(c.id)).toBeNull();
    });

    it('honours its limit and leaves live leases alone', async () => {
      const { store, clock } = h();
      const ids = (await store.scheduleMany([{ kind: 'a' }, { kind: 'b' }, { kind: 'c' }])).map((s) => s.id);
      const claimed = await store.claim({ owner: 'w1', limit: 3, leaseMs: LEASE_MS });
      expect(claimed).toHaveLength(3);
      clock.tick(LEASE_MS + 1);
      const live = await store.schedule({ kind: 'live' });
      await claimExactly(store, live.id, 'w2', 60_000);
      const first = await store.reclaimExpired({ limit: 2 });
      expect(first).toHaveLength(2);
      const second = await store.reclaimExpired({ limit: 2 });
      expect(second).toHaveLength(1);
      expect(new Set([...first, ...second].map((r) => r.id))).toEqual(new Set(ids));
      expect(await store.reclaimExpired()).toEqual([]);
      expect((await mustGetTask(store, live.id)).state).toBe(TaskState.CLAIMED);
    });
  });
}
