/**
 * release: the holder hands its attempt back at shutdown, fenced by attempt: CLAIMED → SCHEDULED
 * due now (attempt kept, no failure counted, `lastError` untouched: a hand-back is not an error), or
 * CANCELLED when cancel was requested; a stale attempt changes nothing. And `lastError` means an
 * error: a task that ends DONE has none, whatever its earlier attempts recorded.
 */
import { CancelOutcome, LEASE_EXPIRED_ERROR, TaskState } from '@postpone/core';
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
        lastError: null,
      });
      expect(await store.getCompletion(c.id)).toBeNull();
      expect(await claimExactly(store, c.id, 'w2')).toMatchObject({ attempt: 2, failures: 0 });
    });

    it('keeps the lastError of an earlier failure (a hand-back is not an error); DONE afterwards clears it', async () => {
      const { store } = h();
      const c = await scheduleAndClaim(store, { maxAttempts: 3 });
      expect(await store.fail({ id: c.id, attempt: c.attempt, error: 'smtp 421', backoffMs: 0 })).toMatchObject({ outcome: 'SCHEDULED' });
      const second = await claimExactly(store, c.id, 'w2');
      expect(await store.release({ id: c.id, attempt: second.attempt })).toBe('SCHEDULED');
      expect(await mustGetTask(store, c.id)).toMatchObject({ state: TaskState.SCHEDULED, attempt: 2, failures: 1, lastError: 'smtp 421' });
      const third = await claimExactly(store, c.id, 'w3');
      expect(await store.complete({ id: c.id, attempt: third.attempt, owner: 'w3', result: { sent: true } })).toBe('DONE');
      expect(await mustGetTask(store, c.id)).toMatchObject({ state: TaskState.DONE, attempt: 3, failures: 1, lastError: null, result: { sent: true } });
    });

    it('a task reclaimed after its lease expired and then DONE has no lastError (completeMany too)', async () => {
      const { store, clock } = h();
      const a = await scheduleAndClaim(store, { maxAttempts: 3 });
      clock.tick(LEASE_MS + 1);
      expect(await store.reclaimExpired()).toEqual([{ id: a.id, attempt: 1, outcome: 'SCHEDULED' }]);
      expect((await mustGetTask(store, a.id)).lastError).toBe(LEASE_EXPIRED_ERROR);
      const again = await claimExactly(store, a.id, 'w2');
      expect(await store.complete({ id: a.id, attempt: again.attempt, owner: 'w2', result: null })).toBe('DONE');
      expect(await mustGetTask(store, a.id)).toMatchObject({ state: TaskState.DONE, attempt: 2, failures: 1, lastError: null });

      const b = await scheduleAndClaim(store, { maxAttempts: 3 });
      expect(await store.fail({ id: b.id, attempt: b.attempt, error: 'boom', backoffMs: 0 })).toMatchObject({ outcome: 'SCHEDULED' });
      const bAgain = await claimExactly(store, b.id, 'w2');
      expect(await store.completeMany([{ id: b.id, attempt: bAgain.attempt, owner: 'w2', result: 1 }])).toEqual(['DONE']);
      expect(await mustGetTask(store, b.id)).toMatchObject({ state: TaskState.DONE, failures: 1, lastError: null, result: 1 });
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
