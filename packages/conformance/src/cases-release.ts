/**
 * release: the holder hands its attempt back at shutdown, fenced by attempt: CLAIMED → SCHEDULED
 * due now (attempt kept, no failure counted), or CANCELLED when cancel was requested; a stale
 * attempt changes nothing.
 */
import { CancelOutcome, RELEASED_ERROR, TaskState } from '@postpone/core';
import { describe, expect, it } from 'vitest';
import { claimExactly, LEASE_MS, mustGetTask, observe, scheduleAndClaim } from './kit/helpers.js';
import type { HarnessRef } from './kit/harness.js';

export function releaseCases(h: HarnessRef): void {
  describe('release', () => {
    it('moves the current attempt back to SCHEDULED due now, lease cleared, claimable at once', async () => {
      const { store, clock } = h();
      const c = await scheduleAndClaim(store, { maxAttempts: 3 });
      clock.tick(50);
      expect(await store.release({ id: c.id, attempt: c.attempt })).toBe('SCHEDULED');
      expect(await mustGetTask(store, c.id)).toMatchObject({
        state: TaskState.SCHEDULED,
        dueAt: new Date(clock.now()),
        attempt: 1,
        failures: 0,
        leaseOwner: null,
        leaseUntil: null,
        lastError: RELEASED_ERROR,
      });
      expect(await store.getEffect(c.id)).toBeNull();
      expect(await claimExactly(store, c.id, 'w2')).toMatchObject({ attempt: 2, failures: 0 });
    });

    it('a cancel-requested task goes to CANCELLED', async () => {
      const { store } = h();
      const c = await scheduleAndClaim(store);
      expect(await store.cancel(c.id)).toBe(CancelOutcome.REQUESTED);
      expect(await store.release({ id: c.id, attempt: c.attempt })).toBe('CANCELLED');
      expect(await mustGetTask(store, c.id)).toMatchObject({ state: TaskState.CANCELLED, leaseOwner: null, leaseUntil: null });
    });

    it('a stale or repeated release changes nothing', async () => {
      const { store, clock } = h();
      const c = await scheduleAndClaim(store, { maxAttempts: 3 });
      clock.tick(LEASE_MS + 1);
      await store.reclaimExpired();
      const again = await claimExactly(store, c.id, 'w2');
      const before = await observe(store, c.id);
      expect(await store.release({ id: c.id, attempt: c.attempt })).toBe('REJECTED_STALE');
      expect(await observe(store, c.id)).toEqual(before);
      expect(await store.release({ id: c.id, attempt: again.attempt })).toBe('SCHEDULED');
      const released = await observe(store, c.id);
      expect(await store.release({ id: c.id, attempt: again.attempt })).toBe('REJECTED_STALE');
      expect(await observe(store, c.id)).toEqual(released);
      expect(await store.release({ id: '987654321', attempt: 1 })).toBe('REJECTED_STALE');
    });
  });
}
